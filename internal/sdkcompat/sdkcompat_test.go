package sdkcompat

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseResults(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Result
		wantErr string // a word the error must contain; empty: no error
	}{
		{
			name: "cases, quirks, xfail and blank lines",
			in: `{"case":"a.b","ok":true,"detail":"ok","ms":3}

{"case":"a.c","ok":false,"detail":"events: got x, want y","ms":10,"quirks":{"reject_status":"spec"}}
{"case":"a.d","ok":true,"detail":"expected failure","ms":1,"xfail":true}
`,
			want: []Result{
				{Case: "a.b", OK: true, Detail: "ok", MS: 3},
				{Case: "a.c", OK: false, Detail: "events: got x, want y", MS: 10, Quirks: map[string]string{"reject_status": "spec"}},
				{Case: "a.d", OK: true, Detail: "expected failure", MS: 1, XFail: true},
			},
		},
		{name: "empty output", in: "", want: nil},
		{
			name:    "a line that is not JSON",
			in:      "{\"case\":\"a\",\"ok\":true}\nTypeError: boom\n",
			want:    []Result{{Case: "a", OK: true}},
			wantErr: "line 2",
		},
		{name: "a result without a case", in: `{"ok":true}`, wantErr: "no case name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseResults(strings.NewReader(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one naming %q", err, tt.wantErr)
			}
		})
	}
}

// needNode skips the test without node and npm, except in CI.
func needNode(t *testing.T) {
	t.Helper()
	if err := checkTools(context.Background()); err != nil {
		if !errors.Is(err, ErrNoNode) || os.Getenv("CI") == "true" {
			t.Fatalf("node and npm are required in CI: %v", err)
		}
		t.Skip(err)
	}
}

// frontEnd answers what a browser front end asks outside the SDK (the
// suite's "http" group), with or without CORS.
func frontEnd(cors bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cors {
			w.Header().Set("Access-Control-Allow-Origin", "*")
			w.Header().Set("Access-Control-Expose-Headers", "content-location,x-pagination-total")
		}
		switch {
		case r.Method == http.MethodOptions:
			if cors {
				w.Header().Set("Access-Control-Allow-Headers", r.Header.Get("Access-Control-Request-Headers"))
				w.Header().Set("Access-Control-Allow-Methods", "GET,POST,PUT,PATCH,DELETE")
			}
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodGet && r.URL.Path == "/ok":
			w.Write([]byte(`{"ok":true}`))
		case r.Method == http.MethodGet && r.URL.Path == "/info":
			w.Write([]byte(`{"version":"test"}`))
		case r.Method == http.MethodPost && r.URL.Path == "/threads/search":
			w.Header().Set("X-Pagination-Total", "0")
			w.Write([]byte(`[]`))
		default:
			http.NotFound(w, r)
		}
	})
}

// TestRunReportsCases runs the real suite (npm ci, node, the pinned SDK)
// against stand-in servers for the one group that needs no graphs: the
// harness must pass what passes and report what fails.
func TestRunReportsCases(t *testing.T) {
	needNode(t)
	good := httptest.NewServer(frontEnd(true))
	defer good.Close()
	results := Run(t, good.URL, &Options{Only: "http"})
	got := map[string]bool{}
	for _, r := range results {
		got[r.Case] = r.OK
	}
	if diff := cmp.Diff(map[string]bool{"http.ok_info": true, "http.cors": true}, got); diff != "" {
		t.Errorf("cases against a server with CORS (-want +got):\n%s", diff)
	}

	bad := httptest.NewServer(frontEnd(false))
	defer bad.Close()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	results, err = RunSuite(context.Background(), dir, bad.URL, &Options{Only: "http"})
	if err != nil {
		t.Fatalf("failed cases are results, not an error: %v", err)
	}
	got = map[string]bool{}
	for _, r := range results {
		got[r.Case] = r.OK
		if !r.OK && !strings.Contains(r.Detail, "Access-Control") {
			t.Errorf("%s detail %q does not name the missing header", r.Case, r.Detail)
		}
	}
	if diff := cmp.Diff(map[string]bool{"http.ok_info": true, "http.cors": false}, got); diff != "" {
		t.Errorf("cases against a server without CORS (-want +got):\n%s", diff)
	}
}

func TestRunSuiteUnknownCase(t *testing.T) {
	needNode(t)
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunSuite(context.Background(), dir, "http://127.0.0.1:1", &Options{Only: "no.such.case"})
	if err == nil || !strings.Contains(err.Error(), "no.such.case") {
		t.Errorf("error %v, want one naming the unknown case", err)
	}
}

// TestReference runs the whole suite against the reference JS server
// (../shared/bench/server/start-reference.sh) when WEFT_REFERENCE_URL names
// it; CI does not.
func TestReference(t *testing.T) {
	url := os.Getenv("WEFT_REFERENCE_URL")
	if url == "" {
		t.Skip("WEFT_REFERENCE_URL is not set")
	}
	results := Run(t, url, &Options{Reference: true})
	quirks := map[string]string{}
	for _, r := range results {
		for k, v := range r.Quirks {
			quirks[k] = v
		}
	}
	t.Logf("quirks: %v", quirks)
}
