package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/server"
)

// BenchmarkStreamEcho measures what bench/server measures for one
// client: create a thread, stream one echo run with values and
// messages-tuple, check its end. Allocations per run do not depend on
// the machine's load; times do.
func BenchmarkStreamEcho(b *testing.B) {
	for _, be := range []string{"memory", "sqlite"} {
		b.Run(be, func(b *testing.B) {
			opts := server.Options{Graphs: apitestGraphs()}
			if be == "sqlite" {
				opts.DB = benchDB(b)
			}
			srv, err := server.New(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Shutdown(context.Background())
			ts := wrapBench(srv)
			defer ts.Close()
			cl := ts.Client()
			body := `{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"w0 w1 w2 w3 w4 w5 w6 w7"}]},"stream_mode":["values","messages-tuple"]}`
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, err := cl.Post(ts.URL+"/threads", "application/json", strings.NewReader(`{}`))
					if err != nil {
						b.Fatal(err)
					}
					th, _ := io.ReadAll(res.Body)
					res.Body.Close()
					id := th[bytes.Index(th, []byte(`"thread_id":"`))+13:][:36]
					res, err = cl.Post(ts.URL+"/threads/"+string(id)+"/runs/stream", "application/json", strings.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					out, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK || bytes.Count(out, []byte("event: ")) != 11 {
						b.Fatalf("stream: %d %s", res.StatusCode, out)
					}
				}
			})
		})
	}
}
