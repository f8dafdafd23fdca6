package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/weftlabs/weft/examples/apitest"
	"github.com/weftlabs/weft/server"
)

// A client of document 003's API in Go: start a run in the background
// with POST /agent/run-async, and follow it on the session's WebSocket
// until its response. echo sends none of the documents' events itself,
// so the server derives them (session_state, complete).
func Example_agentRunAsync() {
	ctx := context.Background()
	srv, err := server.New(ctx, server.Options{Graphs: map[string]server.GraphFunc{"echo": apitest.Echo}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	res, err := http.Post(ts.URL+"/agent/run-async", "application/json",
		strings.NewReader(`{"user_input": "hello there", "assistant_id": "echo"}`))
	if err != nil {
		log.Fatal(err)
	}
	var started struct {
		SessionID    string `json:"session_id"`
		WebSocketURL string `json:"websocket_url"`
	}
	err = json.NewDecoder(res.Body).Decode(&started)
	res.Body.Close()
	if err != nil {
		log.Fatal(err)
	}

	conn, _, err := websocket.Dial(ctx, started.WebSocketURL, nil) // with API keys: DialOptions.HTTPHeader
	if err != nil {
		log.Fatal(err)
	}
	defer conn.CloseNow()
	for {
		var msg struct {
			Type    string          `json:"type"`
			Derived bool            `json:"derived"`
			Data    json.RawMessage `json:"data"`
		}
		if err := wsjson.Read(ctx, conn, &msg); err != nil {
			log.Fatal(err)
		}
		fmt.Println(msg.Type, msg.Derived)
		switch msg.Type {
		case "hitl_request":
			// The run stopped for a person: answer, and read on.
			_ = wsjson.Write(ctx, conn, map[string]any{"type": "hitl_response", "data": map[string]string{"action": "accept"}})
		case "complete":
			var done struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(msg.Data, &done)
			fmt.Println(done.Text)
			conn.Close(websocket.StatusNormalClosure, "")
			return
		}
	}
	// Output:
	// session_state true
	// session_state true
	// complete true
	// hello there
}
