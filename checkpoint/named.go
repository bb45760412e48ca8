package checkpoint

// This file owns which registry of a store a Store value means: the
// store's default one, or a named one (Named), whose checkpoints, ids,
// retention and data objects are its own.

import (
	"context"

	"github.com/strata-db/strata/remote"
)

// registryID is where a registry lives in a store and how it holds its
// objects.
type registryID struct {
	// name is "" for the store's default registry.
	name string
	// object is the registry's object: "registry", or
	// "registries/<name>".
	object string
	// holder is its holder name in reference markers (package remote).
	holder string
	// data is the prefix of the data objects it writes: "data/", or
	// "data/<name>/".
	data string
}

// namedRegistryPrefix is the prefix of the named registries' objects.
const namedRegistryPrefix = "registries/"

var defaultRegistry = registryID{object: registryName, holder: remote.RegistryHolder, data: dataPrefix}

// what names the registry in messages.
func (r registryID) what() string {
	if r.name == "" {
		return "the registry"
	}
	return "registry " + r.name
}

func namedRegistry(name string) registryID {
	return registryID{name: name, object: namedRegistryPrefix + name,
		holder: remote.NamedRegistryHolder(name), data: dataPrefix + name + "/"}
}

// registryStore is a Store that says which registry it means: a Named
// view, or a wrapper of one (SlowStore).
type registryStore interface {
	registry() registryID
}

// registryOf returns the registry s means.
func registryOf(s Store) registryID {
	if r, ok := s.(registryStore); ok {
		return r.registry()
	}
	return defaultRegistry
}

// Named returns the view of s whose checkpoint registry is the one called
// name: Uploaders, Restore, OpenFromStore (package strata), Checkpoints,
// ReadManifest and Objects given the view work on that registry alone, and
// every other request (shared files, reference markers, holds) goes to s
// as it is.
//
// A store takes checkpoints from one Uploader per registry at a time
// (uploads of one registry replace its one object), so database instances
// that checkpoint into one store give each its own name: their uploads
// then run side by side, each registry retains its own last
// UploadOptions.KeepLast checkpoints, and checkpoint ids count per
// registry (checkpoint 7 of "op-1" and of "op-2" are two checkpoints).
// Objects stay while any registry's retained checkpoint or any instance
// refers to them: every registry holds what it uses by reference markers
// of its own (package remote), so one registry's retention never deletes
// what another's checkpoints use. Audit checks every registry of a store.
//
// A name is 1 to 64 ASCII letters, digits, '.', '_' and '-', beginning
// with a letter or digit. A wrapper of the view must be a SlowStore or
// pass the view itself along: any other wrapper means the default
// registry (wrap s first, then name it).
func Named(s Store, name string) (Store, error) {
	if err := remote.CheckRegistryName(name); err != nil {
		return nil, err
	}
	n := &namedStore{Store: s, reg: namedRegistry(name)}
	if c, ok := s.(Composer); ok {
		return &namedComposer{namedStore: n, c: c}, nil
	}
	return n, nil
}

// RegistryName returns the name of the registry s means: "" for the
// store's default registry, else the name given to Named.
func RegistryName(s Store) string { return registryOf(s).name }

// SameStore reports whether a and b are one store, or views of one store
// (Named): they hold the same objects, whichever registry each means.
func SameStore(a, b Store) bool { return unnamed(a) == unnamed(b) }

// unnamed returns the store a view of Named is of, or s itself.
func unnamed(s Store) Store {
	switch v := s.(type) {
	case *namedStore:
		return v.Store
	case *namedComposer:
		return v.Store
	}
	return s
}

type namedStore struct {
	Store
	reg registryID
}

func (n *namedStore) registry() registryID { return n.reg }

// namedComposer is the view of a store that composes objects.
type namedComposer struct {
	*namedStore
	c Composer
}

func (n *namedComposer) Compose(ctx context.Context, name string, parts []Part) (int64, error) {
	return n.c.Compose(ctx, name, parts)
}
