// Package apikey authenticates requests by API key: each key belongs to a
// user, and a request acts for the user of the key it carries, in the
// x-api-key header (as the LangGraph SDKs send it) or as
// "Authorization: Bearer KEY".
//
// Keys come from a file (YAML or JSON) or from a string such as the
// environment variable WEFT_API_KEYS. A file may hold each key's SHA-256
// instead of the key, so that it holds no secret:
//
//	keys:
//	  - user: alice
//	    sha256: 08de70070336baac3db11e5cca05f85f86ebd13d9ba9b67a357084e7fa43532d
//	  - user: bob
//	    key: bob-0123456789abcdef
//
// Keys are compared by their SHA-256, in constant time, against every key
// of the set, so the time an answer takes tells nothing of how close a
// guess was.
package apikey

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// EnvVar names the environment variable the CLI reads keys from.
const EnvVar = "WEFT_API_KEYS"

// MinKeyLength is the fewest characters a key given in clear may have: a
// shorter one is too easy to guess.
const MinKeyLength = 16

// HashPrefix marks a key given by its SHA-256 in a string of keys (see
// ParseList).
const HashPrefix = "sha256:"

// Errors of Authenticate; both are answered with 401.
var (
	// ErrMissing means the request carries no API key.
	ErrMissing = errors.New("apikey: no API key")
	// ErrUnknown means the request's API key is not one of the set's.
	ErrUnknown = errors.New("apikey: unknown API key")
)

// ErrInvalid means keys cannot be read: a file or string that is not in
// the expected shape, a key too short, a key given twice.
var ErrInvalid = errors.New("apikey: invalid keys")

// Key is one API key and the user it acts for. Exactly one of Key and
// SHA256 is set.
type Key struct {
	// User is the user id: who owns the threads, runs and store items
	// the key's requests make.
	User string
	// Key is the key in clear.
	Key string
	// SHA256 is the key's SHA-256, in hex (see Hash).
	SHA256 string
}

// Hash returns the SHA-256 of key in hex, as a key file may hold it.
func Hash(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}

type entry struct {
	user string
	sum  [sha256.Size]byte
}

// Set is a set of API keys. It is immutable and safe for concurrent use.
type Set struct {
	entries []entry
	users   map[string]bool
}

// New returns the set of keys. It fails, wrapping ErrInvalid, when a key
// is malformed or given twice (for one user or two).
func New(keys ...Key) (*Set, error) {
	s := &Set{users: map[string]bool{}}
	owner := map[[sha256.Size]byte]string{}
	for i, k := range keys {
		e, err := k.entry()
		if err != nil {
			return nil, fmt.Errorf("%w: key %d: %w", ErrInvalid, i+1, err)
		}
		if prev, dup := owner[e.sum]; dup {
			return nil, fmt.Errorf("%w: one key is given twice, for users %q and %q; each key must be given once", ErrInvalid, prev, k.User)
		}
		owner[e.sum] = k.User
		s.entries = append(s.entries, e)
		s.users[k.User] = true
	}
	return s, nil
}

func (k Key) entry() (entry, error) {
	if err := checkUser(k.User); err != nil {
		return entry{}, err
	}
	switch {
	case k.Key != "" && k.SHA256 != "":
		return entry{}, fmt.Errorf("user %q has both a key and a sha256; give one", k.User)
	case k.Key != "":
		if n := utf8.RuneCountInString(k.Key); n < MinKeyLength {
			return entry{}, fmt.Errorf("the key of user %q has %d characters; a key needs at least %d (e.g. openssl rand -hex 32)", k.User, n, MinKeyLength)
		}
		if strings.TrimSpace(k.Key) != k.Key || strings.ContainsFunc(k.Key, unicode.IsControl) {
			return entry{}, fmt.Errorf("the key of user %q starts or ends with spaces or holds control characters, which a header cannot carry", k.User)
		}
		return entry{user: k.User, sum: sha256.Sum256([]byte(k.Key))}, nil
	case k.SHA256 != "":
		b, err := hex.DecodeString(k.SHA256)
		if err != nil || len(b) != sha256.Size {
			return entry{}, fmt.Errorf("the sha256 of user %q is not 64 hexadecimal digits", k.User)
		}
		e := entry{user: k.User}
		copy(e.sum[:], b)
		return e, nil
	}
	return entry{}, fmt.Errorf("user %q has no key; give key or sha256", k.User)
}

func checkUser(u string) error {
	if strings.TrimSpace(u) == "" {
		return errors.New("a key has no user; every key needs the user id it acts for")
	}
	if strings.TrimSpace(u) != u || strings.ContainsFunc(u, unicode.IsControl) || !utf8.ValidString(u) {
		return fmt.Errorf("user %q: a user id has no surrounding spaces or control characters", u)
	}
	return nil
}

// Len returns the number of keys.
func (s *Set) Len() int { return len(s.entries) }

// Users returns the number of distinct users.
func (s *Set) Users() int { return len(s.users) }

// Lookup returns the user of key. Every key of the set is compared, in
// constant time, whether or not one matched already.
func (s *Set) Lookup(key string) (user string, ok bool) {
	sum := sha256.Sum256([]byte(key))
	found := -1
	for i := range s.entries {
		if subtle.ConstantTimeCompare(sum[:], s.entries[i].sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return s.entries[found].user, true
}

// FromRequest returns the API key r carries: its x-api-key header, or
// else the token of an "Authorization: Bearer" header; "" when it carries
// none.
func FromRequest(r *http.Request) string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	a := r.Header.Get("Authorization")
	if scheme, token, ok := strings.Cut(a, " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token)
	}
	return ""
}

// Authenticate returns the user r acts for, or an error wrapping
// ErrMissing or ErrUnknown.
func (s *Set) Authenticate(r *http.Request) (string, error) {
	k := FromRequest(r)
	if k == "" {
		return "", ErrMissing
	}
	u, ok := s.Lookup(k)
	if !ok {
		return "", ErrUnknown
	}
	return u, nil
}

// Load reads the keys of a file, YAML or JSON (see Parse).
func Load(path string) ([]Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("apikey: %w", err)
	}
	return Parse(data, path)
}

// Parse reads keys from a document, YAML or JSON, with one field, keys: a
// list of {user, key} or {user, sha256}. Any other field is an error
// naming it, so that a misspelt field never leaves a key out silently.
// source names the document in errors.
func Parse(data []byte, source string) ([]Key, error) {
	fail := func(line int, format string, args ...any) error {
		where := source
		if line > 0 {
			where = fmt.Sprintf("%s:%d", source, line)
		}
		return fmt.Errorf("%w: %s: %s", ErrInvalid, where, fmt.Sprintf(format, args...))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fail(0, "not YAML or JSON: %v", err)
	}
	if len(doc.Content) == 0 {
		return nil, fail(0, "empty; expected a document with a list of keys (keys: [{user: ..., sha256: ...}])")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fail(root.Line, "expected a mapping with the field keys")
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "keys" {
			return nil, fail(k.Line, "unknown field %q; the only field is keys", k.Value)
		}
		list = v
	}
	if list == nil {
		return nil, fail(root.Line, "no field keys; expected keys: [{user: ..., sha256: ...}]")
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fail(list.Line, "keys must be a list of {user, key} or {user, sha256}")
	}
	var out []Key
	for _, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, fail(item.Line, "each key is a mapping {user, key} or {user, sha256}")
		}
		var k Key
		for i := 0; i+1 < len(item.Content); i += 2 {
			f, v := item.Content[i], item.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				return nil, fail(v.Line, "field %s must be a string", f.Value)
			}
			switch f.Value {
			case "user":
				k.User = v.Value
			case "key":
				k.Key = v.Value
			case "sha256":
				k.SHA256 = strings.ToLower(v.Value)
			default:
				return nil, fail(f.Line, "unknown field %q in a key; the fields are user, key and sha256", f.Value)
			}
		}
		if _, err := k.entry(); err != nil {
			return nil, fail(item.Line, "%v", err)
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fail(list.Line, "the list of keys is empty")
	}
	return out, nil
}

// ParseList reads keys from a string such as $WEFT_API_KEYS: entries
// separated by commas or white space, each USER:KEY, or
// USER:sha256:HEX for a key given by its SHA-256. A user id holds no ':'.
func ParseList(s, source string) ([]Key, error) {
	var out []Key
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		user, key, ok := strings.Cut(f, ":")
		if !ok || user == "" || key == "" {
			return nil, fmt.Errorf("%w: %s: an entry is not USER:KEY or USER:sha256:HEX (entry %d)", ErrInvalid, source, len(out)+1)
		}
		k := Key{User: user, Key: key}
		if h, ok := strings.CutPrefix(key, HashPrefix); ok {
			k = Key{User: user, SHA256: strings.ToLower(h)}
		}
		if _, err := k.entry(); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, source, err)
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s is set but holds no key; expected USER:KEY entries separated by commas", ErrInvalid, source)
	}
	return out, nil
}
