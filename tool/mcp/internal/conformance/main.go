// Command conformance is weft's MCP client as the MCP conformance suite
// (@modelcontextprotocol/conformance, client mode) drives it: the suite
// starts a test server for a scenario and runs this program with the
// server's URL as its last argument, the scenario's name in
// MCP_CONFORMANCE_SCENARIO and its data (pre-registered OAuth clients) in
// MCP_CONFORMANCE_CONTEXT. The program connects through tool/mcp's
// Manager, lists the tools into a registry and calls the scenario's tool
// as an agent would, through the weft tool; it exits non-zero when any
// step fails. tool/mcp's tests build and run it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/weftlabs/weft/tool/mcp"
)

// calls names the tool each scenario's server expects to be called, with
// its arguments; scenarios not listed only connect and list tools.
var calls = map[string]struct{ tool, args string }{
	"tools_call":                          {"add_numbers", `{"a": 5, "b": 3}`},
	"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", `{}`},
	"sse-retry":                           {"test_reconnection", `{}`},
}

// server is the name of the scenario's server in the configuration.
const server = "conformance"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return errors.New("usage: conformance SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)")
	}
	endpoint := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var scenarioCtx map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &scenarioCtx); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	opts := mcp.Options{
		ConnectTimeout:  20 * time.Second,
		RefreshInterval: -1,
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, nil)),
		// A program that cannot ask a person accepts, leaving every field
		// to its default (SEP-1034: the SDK fills in the schema's defaults).
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	}
	call, hasCall := calls[scenario]
	if strings.HasPrefix(scenario, "auth/") {
		h, err := oauthHandler(scenarioCtx)
		if err != nil {
			return err
		}
		opts.OAuthHandler = func(string) auth.OAuthHandler { return h }
		call, hasCall = struct{ tool, args string }{"test-tool", `{}`}, true
	}
	m, err := mcp.Start(ctx, &mcp.Config{Servers: map[string]mcp.ServerConfig{server: {URL: endpoint}}}, opts)
	if err != nil {
		return err
	}
	defer m.Close()
	st := m.Servers()[0]
	if st.State != mcp.StateConnected {
		return fmt.Errorf("scenario %s: server %s: %s: %v", scenario, endpoint, st.State, st.Err)
	}
	fmt.Fprintf(os.Stderr, "scenario %s: connected, tools %v\n", scenario, m.Registry().Names())
	if !hasCall {
		return nil
	}
	t, ok := m.Tool(server, call.tool)
	if !ok {
		return fmt.Errorf("scenario %s: the server has no tool %s; its tools are %v", scenario, call.tool, m.Registry().Names())
	}
	r, err := t.Run(ctx, json.RawMessage(call.args), 30*time.Second)
	if err != nil || !r.Success {
		return fmt.Errorf("scenario %s: %s: %s %s (%v)", scenario, t.Name(), r.ErrorCode, r.Error, err)
	}
	fmt.Fprintf(os.Stderr, "scenario %s: %s answered %v\n", scenario, t.Name(), r.Data)
	return nil
}

// oauthHandler authorizes with the authorization-code flow, registering
// the client by whichever means the scenario's server offers: a
// pre-registered client from the scenario's data, a client ID metadata
// document, or dynamic registration.
func oauthHandler(scenarioCtx map[string]any) (auth.OAuthHandler, error) {
	const redirect = "http://localhost:3000/callback"
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: followAuthorization,
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{
			URL: "https://conformance-test.local/client-metadata.json",
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{redirect}},
		},
	}
	id, _ := scenarioCtx["client_id"].(string)
	secret, _ := scenarioCtx["client_secret"].(string)
	if id != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: id}
		if secret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
	}
	return auth.NewAuthorizationCodeHandler(cfg)
}

// followAuthorization plays the user at the authorization page: the
// suite's authorization server redirects at once to the callback, whose
// query holds the code.
func followAuthorization(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.String() == "" {
		return nil, fmt.Errorf("the authorization server answered %s without a redirect to the callback", resp.Status)
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
