package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/weftlabs/weft/server"
)

// A client joining the stream of a run that another server executes (no
// shared broker: this server has no events of it) gets the stream's
// headers at once, while the run goes on, as every stream does; the
// stream then ends when the run does.
func TestJoinStreamOfRunElsewhereSendsHeaders(t *testing.T) {
	db := backends[0].open(t)
	a := newServer(t, server.Options{DB: db})
	bs := newServer(t, server.Options{DB: reopen(t, db)})
	tid := a.newThread()
	rid := a.startSlow(tid, "a", 600000)
	req, err := http.NewRequest("GET", bs.ts.URL+"/threads/"+tid+"/runs/"+rid+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res *http.Response
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := bs.ts.Client().Do(req)
		got <- answer{res, err}
	}()
	var ans answer
	select {
	case ans = <-got:
	case <-time.After(30 * time.Second):
		// The run lasts ten minutes: the headers wait for its end.
		a.must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
		<-got
		t.Fatal("no response headers for the joined stream while the run went on")
	}
	if ans.err != nil {
		t.Fatal(ans.err)
	}
	defer ans.res.Body.Close()
	if ans.res.StatusCode != 200 || ans.res.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("joined stream: %d %q", ans.res.StatusCode, ans.res.Header.Get("Content-Type"))
	}
	a.must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
}
