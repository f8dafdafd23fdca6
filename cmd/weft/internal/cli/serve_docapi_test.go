package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// weft serve speaks the design documents' own API beside the LangGraph
// API, over the same threads.
func TestServeDocAPI(t *testing.T) {
	url, _ := startServe(t, "--graphs", "apitest", "--db", filepath.Join(t.TempDir(), "weft.db"))
	res, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"database":{"latency_ms"`) {
		t.Errorf("health: %d %s", res.StatusCode, body)
	}
	var out struct {
		SessionID string `json:"session_id"`
		Status    string `json:"status"`
		Response  struct {
			Text string `json:"text"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(post(t, url+"/agent/run", `{"user_input":"served twice","assistant_id":"echo"}`)), &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != "completed" || out.Response.Text != "served twice" {
		t.Errorf("/agent/run = %+v", out)
	}
	if th := post(t, url+"/threads/search", `{"ids":["`+out.SessionID+`"]}`); !strings.Contains(th, `"graph_id":"echo"`) {
		t.Errorf("the session is not a thread of the LangGraph API: %s", th)
	}
}
