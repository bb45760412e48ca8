package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/internal/base"
)

// Holds. A database opened from a checkpoint must hold every object of
// the checkpoint before Open returns (rule 2 of the references), and a
// marker per object costs a request per object: a store that serializes
// its writes makes Open wait for all of them. A hold is one object,
// holds/<holder>, that lists the objects holder holds; it counts as a
// marker of holder on each of them. The holder writes it in one request,
// then checks the other holder as rule 2 says, and later converts it
// into markers in the background (ConvertHold): markers first, then the
// hold goes, so that the objects are held throughout.
//
// Every deletion of an object (DeleteUnheld, which DropRef and Sweep
// use) lists the holds, after the object's markers, and keeps an object
// a hold names: a hold written before that List is seen, and an opener
// whose hold comes after it finds, on its check that follows, that the
// other holder let the object go. A hold that cannot be read keeps every
// object (the deletion fails, and is tried again later).

// holdsPrefix is the prefix of the holds: holder's is holds/<holder>.
const holdsPrefix = "holds/"

// HoldName returns the name of holder's hold.
func HoldName(holder string) string { return holdsPrefix + holder }

// ParseHoldName reports whether name is a hold, and if so whose.
func ParseHoldName(name string) (holder string, ok bool) {
	h, ok := strings.CutPrefix(name, holdsPrefix)
	return h, ok && h != "" && !strings.Contains(h, "/")
}

// holdMagic begins a hold; its last line is "end <count> <xxhash64>" of
// what precedes it, so that a hold cut short or damaged is not taken for
// one that names fewer objects.
const holdMagic = "strata-hold 1\n"

// EncodeHold returns the bytes of a hold that names objects.
func EncodeHold(objects []string) []byte {
	var b bytes.Buffer
	b.WriteString(holdMagic)
	for _, o := range objects {
		b.WriteString(o)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "end %d %016x\n", len(objects), xxhash.Sum64(b.Bytes()))
	return b.Bytes()
}

// DecodeHold returns the objects a hold names.
func DecodeHold(data []byte) ([]string, error) {
	body, ok := bytes.CutPrefix(data, []byte(holdMagic))
	if !ok {
		return nil, errors.New("not a hold (bad first line)")
	}
	if len(body) == 0 || body[len(body)-1] != '\n' {
		return nil, errors.New("hold cut short")
	}
	i := bytes.LastIndexByte(body[:len(body)-1], '\n') + 1
	last := strings.Fields(string(body[i : len(body)-1]))
	if len(last) != 3 || last[0] != "end" {
		return nil, errors.New("hold cut short (no end line)")
	}
	n, err1 := strconv.Atoi(last[1])
	sum, err2 := strconv.ParseUint(last[2], 16, 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("bad end line %q", body[i:len(body)-1])
	}
	if got := xxhash.Sum64(data[:len(holdMagic)+i]); got != sum {
		return nil, fmt.Errorf("checksum mismatch (%016x, want %016x)", got, sum)
	}
	var objects []string
	if i > 0 {
		objects = strings.Split(string(body[:i-1]), "\n")
	}
	if len(objects) != n {
		return nil, fmt.Errorf("%d objects, the end line says %d", len(objects), n)
	}
	return objects, nil
}

// PutHold writes holder's hold on objects, replacing any it had.
func PutHold(ctx context.Context, s Store, holder string, objects []string) error {
	data := EncodeHold(objects)
	if err := s.Put(ctx, HoldName(holder), bytes.NewReader(data), int64(len(data))); err != nil {
		return fmt.Errorf("remote: put the hold of %s: %w", holder, err)
	}
	return nil
}

// ReadHold returns the objects holder's hold names; found is false if it
// has none.
func ReadHold(ctx context.Context, s Store, holder string) (objects []string, found bool, err error) {
	rc, err := s.Get(ctx, HoldName(holder), 0, -1)
	if errors.Is(err, ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("remote: read the hold of %s: %w", holder, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, false, fmt.Errorf("remote: read the hold of %s: %w", holder, err)
	}
	objects, err = DecodeHold(data)
	if err != nil {
		return nil, false, base.CorruptionErrorf(HoldName(holder), -1, "%v", err)
	}
	return objects, true, nil
}

// convertParallel bounds the marker Puts ConvertHold has in flight: it
// runs in the background of a database just opened, whose first reads
// should not queue behind a hundred Puts at a server that serializes
// them.
const convertParallel = 4

// ConvertHold turns holder's hold, if it has one, into holder's markers
// on the objects it names (convertParallel at a time), then deletes it.
func ConvertHold(ctx context.Context, s Store, holder string) error {
	objects, found, err := ReadHold(ctx, s, holder)
	if err != nil || !found {
		return err
	}
	if _, err := addRefs(ctx, s, objects, holder, convertParallel); err != nil {
		return err
	}
	if err := s.Delete(ctx, HoldName(holder)); err != nil {
		return fmt.Errorf("remote: delete the hold of %s: %w", holder, err)
	}
	return nil
}

// DropHold deletes holder's hold and then deletes each of objects (those
// it named) that nothing else holds, as DropRef does for a marker: what
// an opener that failed its check after the hold does.
func DropHold(ctx context.Context, s Store, holder string, objects []string) error {
	if err := s.Delete(ctx, HoldName(holder)); err != nil {
		return fmt.Errorf("remote: delete the hold of %s: %w", holder, err)
	}
	for _, o := range objects {
		if _, err := DeleteUnheld(ctx, s, o); err != nil {
			return err
		}
	}
	return nil
}

// Held returns, for every hold of the store, the objects it names, by
// holder.
func Held(ctx context.Context, s Store) (map[string][]string, error) {
	list, err := s.List(ctx, holdsPrefix)
	if err != nil {
		return nil, fmt.Errorf("remote: list holds: %w", err)
	}
	out := make(map[string][]string, len(list))
	for _, o := range list {
		holder, ok := ParseHoldName(o.Name)
		if !ok {
			continue
		}
		objects, found, err := ReadHold(ctx, s, holder)
		if err != nil {
			return nil, err
		}
		if found { // else deleted since the List
			out[holder] = objects
		}
	}
	return out, nil
}

// heldBy returns the holders whose holds name object.
func heldBy(ctx context.Context, s Store, object string) ([]string, error) {
	held, err := Held(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []string
	for holder, objects := range held {
		if slices.Contains(objects, object) {
			out = append(out, holder)
		}
	}
	return out, nil
}
