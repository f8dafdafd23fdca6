package yamlstrict_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/internal/yamlstrict"
)

type inner struct {
	Step    bool          `yaml:"step"`
	Timeout time.Duration `yaml:"timeout"`
}

type config struct {
	Name   string             `yaml:"name"`
	Inner  inner              `yaml:"inner"`
	Ptr    *inner             `yaml:"ptr"`
	Tools  map[string]float64 `yaml:"tools"`
	Words  []string           `yaml:"words"`
	Count  int                `yaml:"count"`
	Hidden string             `yaml:"-"`
	Plain  string
}

func TestDecode(t *testing.T) {
	c := config{Name: "default", Count: 3, Inner: inner{Timeout: time.Second}}
	doc := `
name: shop
inner:
  step: true
ptr: {timeout: 2m}
tools: {a: 1.5, b: 2}
words: [x, y]
count:
plain: p
`
	if err := yamlstrict.Decode([]byte(doc), &c); err != nil {
		t.Fatal(err)
	}
	want := config{Name: "shop", Count: 3, Inner: inner{Step: true, Timeout: time.Second}, Ptr: &inner{Timeout: 2 * time.Minute},
		Tools: map[string]float64{"a": 1.5, "b": 2}, Words: []string{"x", "y"}, Plain: "p"}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Every unknown key and bad value is reported, by its path.
func TestDecodeErrors(t *testing.T) {
	doc := `
name: [a]
inner:
  stpe: true
  timeout: soon
ptr: {step: yes}
tools: {a: cheap}
words: {x: 1}
count: 1.5
Hidden: x
name: again
`
	var c config
	err := yamlstrict.Decode([]byte(doc), &c)
	if !errors.Is(err, yamlstrict.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	var errs yamlstrict.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err %T is not Errors", err)
	}
	var keys []string
	for _, e := range errs {
		keys = append(keys, e.Key)
	}
	want := []string{"name", "inner.stpe", "inner.timeout", "ptr.step", "tools.a", "words", "count", "Hidden", "name"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s\nerror: %v", diff, err)
	}
	for _, s := range []string{"inner.stpe (line 4): unknown key (known: step, timeout)", `inner.timeout (line 5): "soon" is not a duration`, "name (line 11): given twice"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	var ke *yamlstrict.KeyError
	if !errors.As(err, &ke) || ke.Key != "name" {
		t.Errorf("errors.As KeyError = %+v", ke)
	}
}

func TestDecodeNotYAML(t *testing.T) {
	var c config
	if err := yamlstrict.Decode([]byte("a: [b"), &c); !errors.Is(err, yamlstrict.ErrInvalid) {
		t.Errorf("err = %v", err)
	}
	if err := yamlstrict.Decode([]byte(""), &c); err != nil {
		t.Errorf("empty document: %v", err)
	}
	if err := yamlstrict.Decode([]byte("- a"), &c); err == nil {
		t.Error("a list at the top: no error")
	}
}

// Decode never panics on any document.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("name: x\ninner: {step: true}\ntools: {a: 1}\nwords: [a]\n"))
	f.Add([]byte("a: &x [1]\nb: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c config
		yamlstrict.Decode(data, &c)
	})
}
