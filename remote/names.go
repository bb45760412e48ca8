package remote

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/strata-db/strata/internal/base"
)

// NewInstanceID returns a new instance id: 16 random hex digits. Every
// database instance that shares files has one (recorded in its manifest),
// and a database opened from a checkpoint gets a new one, so that two
// instances never write objects of the same name.
func NewInstanceID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("remote: reading random bytes: %v", err)) // crypto/rand does not fail on supported systems
	}
	return hex.EncodeToString(b[:])
}

// CheckInstanceID reports whether id is a valid instance id.
func CheckInstanceID(id string) error {
	if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("remote: invalid instance id %q (want 16 lowercase hex digits)", id)
	}
	return nil
}

// ObjectName returns the name of the object that holds the file of type t
// and number num written by instance: shared/<instance>/<file name>.
func ObjectName(instance string, t base.FileType, num base.FileNum) string {
	return instancePrefix(instance) + base.MakeFilename(t, num)
}

// WrittenBy reports whether object is one that instance wrote (under
// shared/<instance>/).
func WrittenBy(object, instance string) bool {
	return instance != "" && strings.HasPrefix(object, instancePrefix(instance))
}

// instancePrefix is the prefix of the objects instance writes.
func instancePrefix(instance string) string { return sharedPrefix + instance + "/" }

// sharedPrefix is the prefix of the objects instances write.
const sharedPrefix = "shared/"

// IsShared reports whether name is an object instances write (under
// shared/).
func IsShared(name string) bool { return strings.HasPrefix(name, sharedPrefix) }

// refsPrefix is the prefix of the reference markers: the marker of holder
// on object is refs/<object>/<holder>.
const refsPrefix = "refs/"

// InstanceHolder returns the holder name of an instance in reference
// markers.
func InstanceHolder(instance string) string { return "i-" + instance }

// HolderInstance returns the instance id of an instance's holder name,
// and whether holder is one.
func HolderInstance(holder string) (string, bool) {
	id, ok := strings.CutPrefix(holder, "i-")
	return id, ok && CheckInstanceID(id) == nil
}

// RegistryHolder is the holder name of a store's checkpoint registry in
// reference markers: the registry holds an object while a retained
// checkpoint refers to it.
const RegistryHolder = "registry"

// namedRegistryPrefix begins the holder name of a named registry.
const namedRegistryPrefix = "registry-"

// NamedRegistryHolder returns the holder name of the checkpoint registry
// called name (package checkpoint's Named): "registry-<name>"; the
// store's default registry, name "", is RegistryHolder.
func NamedRegistryHolder(name string) string {
	if name == "" {
		return RegistryHolder
	}
	return namedRegistryPrefix + name
}

// HolderRegistry returns the name of the checkpoint registry whose holder
// name holder is ("" for the default registry), and whether it is one.
func HolderRegistry(holder string) (string, bool) {
	if holder == RegistryHolder {
		return "", true
	}
	name, ok := strings.CutPrefix(holder, namedRegistryPrefix)
	return name, ok && CheckRegistryName(name) == nil
}

// CheckRegistryName reports whether name may name a checkpoint registry:
// 1 to 64 ASCII letters, digits, '.', '_' and '-', beginning with a letter
// or digit.
func CheckRegistryName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("remote: invalid registry name %q: empty or longer than 64 bytes", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("remote: invalid registry name %q: character %q at %d", name, c, i)
		}
	}
	return nil
}

// MarkerName returns the name of holder's reference marker on object.
func MarkerName(object, holder string) string { return refsPrefix + object + "/" + holder }

func markerPrefix(object string) string { return refsPrefix + object + "/" }
