package apikey

import (
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	aliceKey = "alice-0123456789abcdef"
	bobKey   = "bob-0123456789abcdef"
)

func TestParse(t *testing.T) {
	aliceHash := Hash(aliceKey)
	tests := []struct {
		name, doc string
		want      []Key
		wantErr   string // a part of the error, naming what is wrong
	}{
		{
			name: "yaml",
			doc:  "keys:\n  - user: alice\n    sha256: " + strings.ToUpper(aliceHash) + "\n  - user: bob\n    key: " + bobKey + "\n",
			want: []Key{{User: "alice", SHA256: aliceHash}, {User: "bob", Key: bobKey}},
		},
		{
			name: "json with tabs",
			doc:  "{\n\t\"keys\": [\n\t\t{\"user\": \"alice\", \"sha256\": \"" + aliceHash + "\"}\n\t]\n}",
			want: []Key{{User: "alice", SHA256: aliceHash}},
		},
		{name: "unknown top field", doc: "keys: []\nusers: []\n", wantErr: `:2: unknown field "users"`},
		{name: "unknown key field", doc: "keys:\n  - user: alice\n    sha265: " + aliceHash + "\n", wantErr: `:3: unknown field "sha265" in a key`},
		{name: "no keys field", doc: "{}", wantErr: "no field keys"},
		{name: "empty list", doc: "keys: []", wantErr: "the list of keys is empty"},
		{name: "empty document", doc: "", wantErr: "empty"},
		{name: "not a list", doc: "keys: alice", wantErr: "keys must be a list"},
		{name: "key not a mapping", doc: "keys: [alice]", wantErr: "each key is a mapping"},
		{name: "no user", doc: "keys:\n  - key: " + aliceKey, wantErr: "a key has no user"},
		{name: "no key", doc: "keys:\n  - user: alice", wantErr: `user "alice" has no key`},
		{name: "both", doc: "keys:\n  - {user: alice, key: " + aliceKey + ", sha256: " + aliceHash + "}", wantErr: "both a key and a sha256"},
		{name: "short key", doc: "keys:\n  - {user: alice, key: short}", wantErr: "has 5 characters; a key needs at least 16"},
		{name: "bad hash", doc: "keys:\n  - {user: alice, sha256: abc}", wantErr: "not 64 hexadecimal digits"},
		{name: "field not a string", doc: "keys:\n  - {user: [a]}", wantErr: "field user must be a string"},
		{name: "not yaml", doc: "keys: [", wantErr: "not YAML or JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.doc), "keys.yaml")
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %v; want ErrInvalid saying %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), aliceKey) {
					t.Errorf("the error shows the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseList(t *testing.T) {
	h := Hash(bobKey)
	got, err := ParseList("alice:"+aliceKey+", bob:sha256:"+h+"\n", EnvVar)
	if err != nil {
		t.Fatal(err)
	}
	want := []Key{{User: "alice", Key: aliceKey}, {User: "bob", SHA256: h}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseList (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", " , ", "alice", ":" + aliceKey, "alice:", "alice:short", "bob:sha256:xyz"} {
		_, err := ParseList(bad, EnvVar)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), EnvVar) {
			t.Errorf("ParseList(%q) = %v; want ErrInvalid naming %s", bad, err, EnvVar)
		}
	}
}

// A request acts for the user of its key, whichever header carries it;
// no key, or an unknown one, is refused.
func TestAuthenticate(t *testing.T) {
	s, err := New(Key{User: "alice", SHA256: Hash(aliceKey)}, Key{User: "bob", Key: bobKey}, Key{User: "bob", Key: bobKey + "-2"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 3 || s.Users() != 2 {
		t.Errorf("Len, Users = %d, %d; want 3, 2", s.Len(), s.Users())
	}
	tests := []struct {
		name    string
		headers map[string]string
		user    string
		err     error
	}{
		{"x-api-key", map[string]string{"x-api-key": aliceKey}, "alice", nil},
		{"bearer", map[string]string{"Authorization": "Bearer " + bobKey}, "bob", nil},
		{"bearer lower case", map[string]string{"Authorization": "bearer " + bobKey + "-2"}, "bob", nil},
		{"x-api-key wins", map[string]string{"x-api-key": aliceKey, "Authorization": "Bearer " + bobKey}, "alice", nil},
		{"none", nil, "", ErrMissing},
		{"basic auth is not a key", map[string]string{"Authorization": "Basic YWxpY2U6cHc="}, "", ErrMissing},
		{"unknown", map[string]string{"x-api-key": "nobody-0123456789abcdef"}, "", ErrUnknown},
		{"a hash is not the key", map[string]string{"x-api-key": Hash(aliceKey)}, "", ErrUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/threads", nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			u, err := s.Authenticate(r)
			if u != tt.user || !errors.Is(err, tt.err) {
				t.Errorf("Authenticate = %q, %v; want %q, %v", u, err, tt.user, tt.err)
			}
		})
	}
}

func TestNewRefusesDuplicates(t *testing.T) {
	_, err := New(Key{User: "alice", Key: aliceKey}, Key{User: "bob", SHA256: Hash(aliceKey)})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"alice" and "bob"`) {
		t.Errorf("New = %v; want ErrInvalid naming both users", err)
	}
	if strings.Contains(err.Error(), aliceKey) {
		t.Errorf("the error shows the key: %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(p, []byte(`{"keys":[{"user":"alice","key":"`+aliceKey+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := Load(p)
	if err != nil || len(keys) != 1 || keys[0].User != "alice" {
		t.Fatalf("Load = %v, %v", keys, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v; want ErrNotExist", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("keys:\n  - user: alice\n    key: " + aliceKey + "\n"))
	f.Add([]byte(`{"keys":[{"user":"a","sha256":"` + Hash("x") + `"}]}`))
	f.Add([]byte("keys: [[], {}, {user: {a: b}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := Parse(data, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if _, err := New(keys...); err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("New error %v does not wrap ErrInvalid", err)
		}
	})
}

func FuzzParseList(f *testing.F) {
	f.Add("alice:" + aliceKey + ",bob:sha256:" + Hash(bobKey))
	f.Add(" :: ,")
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseList(s, EnvVar); err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("ParseList error %v does not wrap ErrInvalid", err)
		}
	})
}
