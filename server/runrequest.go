package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/jsonx"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
)

// commandJSON is a run's command: resume an interrupt, update the state,
// go to nodes.
type commandJSON struct {
	Resume json.RawMessage `json:"resume,omitempty"`
	Update json.RawMessage `json:"update,omitempty"`
	Goto   json.RawMessage `json:"goto,omitempty"`
}

// runRequest is the body of the run endpoints.
type runRequest struct {
	AssistantID       *string         `json:"assistant_id"`
	Input             json.RawMessage `json:"input"`
	Command           *commandJSON    `json:"command"`
	Metadata          json.RawMessage `json:"metadata"`
	Config            json.RawMessage `json:"config"`
	Context           json.RawMessage `json:"context"`
	Webhook           string          `json:"webhook"`
	InterruptBefore   json.RawMessage `json:"interrupt_before"`
	InterruptAfter    json.RawMessage `json:"interrupt_after"`
	OnDisconnect      string          `json:"on_disconnect"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	StreamSubgraphs   bool            `json:"stream_subgraphs"`
	StreamResumable   bool            `json:"stream_resumable"`
	AfterSeconds      *float64        `json:"after_seconds"`
	IfNotExists       string          `json:"if_not_exists"`
	OnCompletion      string          `json:"on_completion"`
	FeedbackKeys      json.RawMessage `json:"feedback_keys"`
	CheckpointID      string          `json:"checkpoint_id"`
	Checkpoint        *checkpointRef  `json:"checkpoint"`
	Durability        string          `json:"durability"`
	CheckpointDuring  *bool           `json:"checkpoint_during"`

	// cronTick, set by the cron scheduler (never from a request's body),
	// names the cron's tick the run is made for: the run is made only if
	// that tick has not made its run yet (records.NewRun.CronTick).
	cronTick *records.CronTick
}

// runKwargs is what a run was asked to do, as stored with it (the API's
// run.kwargs).
type runKwargs struct {
	Input           json.RawMessage `json:"input"`
	Command         *commandJSON    `json:"command,omitempty"`
	Config          json.RawMessage `json:"config"`
	Context         json.RawMessage `json:"context"`
	StreamMode      []string        `json:"stream_mode"`
	InterruptBefore []string        `json:"interrupt_before,omitempty"`
	InterruptAfter  []string        `json:"interrupt_after,omitempty"`
	Webhook         string          `json:"webhook,omitempty"`
	Temporary       bool            `json:"temporary"`
	Subgraphs       bool            `json:"subgraphs"`
	Resumable       bool            `json:"resumable"`
	CheckpointID    string          `json:"checkpoint_id,omitempty"`
	CheckpointNS    string          `json:"checkpoint_ns,omitempty"`
	Durability      string          `json:"durability,omitempty"`
	OnDisconnect    string          `json:"on_disconnect,omitempty"`
	AfterSeconds    float64         `json:"after_seconds,omitempty"`
}

// decodeKwargs reads stored kwargs; what cannot be read is an error, not
// a panic.
func decodeKwargs(raw []byte) (runKwargs, error) {
	var kw runKwargs
	if err := json.Unmarshal(raw, &kw); err != nil {
		return runKwargs{}, fmt.Errorf("%w: run kwargs: %v", records.ErrCorrupt, err)
	}
	return kw, nil
}

// runConfig is the part of a run's config the server reads.
type runConfig struct {
	RecursionLimit int `json:"recursion_limit"`
}

// recursionConfig decodes the run's config as a runConfig; ok is false
// when it does not decode. A config that cannot name recursion_limit (no
// escape, no byte past ASCII, which encoding/json's case folding could
// match, and no ASCII spelling of the name in any case) is not decoded:
// most configs hold only configurable values.
func (kw runKwargs) recursionConfig() (cfg runConfig, ok bool) {
	if json.Valid(kw.Config) && !mayName(kw.Config, "recursion_limit") {
		return cfg, true
	}
	return cfg, json.Unmarshal(kw.Config, &cfg) == nil
}

// mayName reports whether JSON text b may hold a key that encoding/json
// takes as the field name (lower case ASCII): b has an escape, a byte
// past ASCII, or name in any case.
func mayName(b []byte, name string) bool {
	for i, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			return true
		}
		if c|0x20 == name[0] && len(b)-i >= len(name) && bytes.EqualFold(b[i:i+len(name)], []byte(name)) {
			return true
		}
	}
	return false
}

// Configurable keys the server sets for a run's nodes, as LangGraph's
// servers do: a client's values for them are replaced.
const (
	// configurableAuthUser is the authenticated user (absent without
	// authentication).
	configurableAuthUser = "langgraph_auth_user_id"
	// configurableUser is the authenticated user too; without
	// authentication it is whatever the client sent.
	configurableUser = "user_id"
)

// runConfigurable is what a run's nodes read with graph.Configurable: the
// config.configurable the run was created with (with the request's x-
// headers), and the server's own values: the run's, thread's, assistant's
// and graph's ids, and the authenticated user, which a client cannot set.
func runConfigurable(kw runKwargs, info RunInfo) map[string]any {
	out, ok := canonicalConfigurable(kw.Config)
	if !ok {
		var cfg struct {
			Configurable map[string]any `json:"configurable"`
		}
		_ = json.Unmarshal(kw.Config, &cfg) // checked when the run was created
		out = cfg.Configurable
	}
	if out == nil {
		out = map[string]any{}
	}
	out["run_id"], out["thread_id"] = info.RunID, info.ThreadID
	out["assistant_id"], out["graph_id"] = info.AssistantID, info.GraphID
	delete(out, configurableAuthUser)
	if info.User != "" {
		out[configurableAuthUser], out[configurableUser] = info.User, info.User
	}
	return out
}

// canonicalConfigurable decodes config.configurable without encoding/json's
// reflection when the config is canonical JSON (jsonx.Canonical: as
// kwargs stores it, unless the client's config holds floats or unsorted
// objects): the same values decoding it into a struct gives. ok is false
// for other configs, and for those with another key that such decoding
// would take as configurable (it matches keys regardless of case).
func canonicalConfigurable(config json.RawMessage) (configurable map[string]any, ok bool) {
	if len(config) == 0 || config[0] != '{' {
		return nil, false
	}
	v, ok := jsonx.DecodeCanonical(config)
	if !ok {
		return nil, false
	}
	cfg := v.(map[string]any)
	if otherConfigurableKey(cfg) {
		return nil, false
	}
	switch c := cfg["configurable"].(type) {
	case map[string]any:
		return c, true
	case nil:
		return nil, true // none, or null
	}
	return nil, false
}

// nodeList reads interrupt_before/after: "*" or a list of node names.
func nodeList(raw json.RawMessage, field string) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var all string
	if json.Unmarshal(raw, &all) == nil {
		if all != "*" {
			return nil, enumIssue(field, all, "*")
		}
		return []string{graph.All}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, api.Invalid(api.TypeIssue("array", kindOf(raw), field))
	}
	return list, nil
}

// streamModeList reads stream_mode: one mode or a list; none is values.
func streamModeList(raw json.RawMessage) ([]string, error) {
	if list, ok := plainModeList(raw); ok {
		return list, nil
	}
	var list []string
	if len(raw) > 0 && string(raw) != "null" {
		// Only a JSON string decodes as one mode: anything else is tried
		// as a list at once, without a failed decoding as a string first.
		var one string
		if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '"' && json.Unmarshal(raw, &one) == nil {
			list = []string{one}
		} else if err := json.Unmarshal(raw, &list); err != nil {
			return nil, api.Invalid(api.TypeIssue("array", kindOf(raw), "stream_mode"))
		}
	}
	for i, m := range list {
		if !slices.Contains(streamModes, m) {
			iss := api.Issue{Code: "invalid_enum_value", Received: m, Path: []any{"stream_mode", i},
				Message: "Invalid enum value. Expected '" + strings.Join(streamModes, "' | '") + "', received '" + m + "'"}
			return nil, api.Invalid(iss)
		}
	}
	if len(list) == 0 {
		list = []string{modeValues}
	}
	return list, nil
}

// plainModeList reads the usual stream_mode, a list of known modes
// without escapes or spaces (as clients send it), without encoding/json;
// its strings are the modes' own. ok is false for anything else, which
// streamModeList reads in full.
func plainModeList(raw json.RawMessage) (list []string, ok bool) {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, false
	}
	body := raw[1 : len(raw)-1]
	n := bytes.Count(body, []byte{','}) + 1
	list = make([]string, 0, n)
	for len(body) > 0 {
		end := bytes.IndexByte(body, ',')
		if end < 0 {
			end = len(body)
		}
		item := body[:end]
		if len(item) < 2 || item[0] != '"' || item[len(item)-1] != '"' {
			return nil, false
		}
		i := slices.Index(streamModes, string(item[1:len(item)-1]))
		if i < 0 {
			return nil, false
		}
		list = append(list, streamModes[i])
		if end == len(body) {
			break
		}
		body = body[end+1:]
		if len(body) == 0 {
			return nil, false // a trailing comma
		}
	}
	if len(list) == 0 {
		return nil, false
	}
	return list, true
}

// The values a run request's enumerated fields take.
var (
	multitaskStrategies = []string{records.MultitaskReject, records.MultitaskRollback, records.MultitaskInterrupt, records.MultitaskEnqueue}
	onDisconnects       = []string{"cancel", "continue"}
	ifNotExistsOptions  = []string{"reject", "create"}
	onCompletions       = []string{"delete", "keep"}
	durabilities        = []string{string(graph.DurabilitySync), string(graph.DurabilityAsync), string(graph.DurabilityExit)}
)

// validate checks a run request's fields, naming the first that is wrong.
func (req *runRequest) validate() error {
	if req.AssistantID == nil || *req.AssistantID == "" {
		return api.Invalid(api.TypeIssue("string", "undefined", "assistant_id"))
	}
	checks := [...]struct {
		v       string
		field   string
		options []string
	}{
		{req.MultitaskStrategy, "multitask_strategy", multitaskStrategies},
		{req.OnDisconnect, "on_disconnect", onDisconnects},
		{req.IfNotExists, "if_not_exists", ifNotExistsOptions},
		{req.OnCompletion, "on_completion", onCompletions},
		{req.Durability, "durability", durabilities},
	}
	for _, c := range checks {
		if c.v != "" && !slices.Contains(c.options, c.v) {
			return enumIssue(c.field, c.v, c.options...)
		}
	}
	if err := jsonObject(req.Metadata, "metadata"); err != nil {
		return err
	}
	if err := jsonObject(req.Config, "config"); err != nil {
		return err
	}
	if len(req.Config) > 0 && string(req.Config) != "null" {
		var c runConfig
		if err := json.Unmarshal(req.Config, &c); err != nil {
			return api.Invalid(api.TypeIssue("number", "string", "config", "recursion_limit"))
		}
		if c.RecursionLimit < 0 {
			return api.Invalid(api.Field("Number must be greater than or equal to 1", "config", "recursion_limit"))
		}
	}
	if req.AfterSeconds != nil && *req.AfterSeconds < 0 {
		return api.Invalid(api.Field("Number must be greater than or equal to 0", "after_seconds"))
	}
	if req.CheckpointID != "" {
		if _, err := uuid.Parse(req.CheckpointID); err != nil {
			return api.Invalid(api.Issue{Code: "invalid_string", Path: []any{"checkpoint_id"}, Message: "Invalid uuid"})
		}
	}
	return nil
}

// kwargs builds what is stored with the run. Request headers x-* (but the
// credentials) and user-agent go into config.configurable, as LangGraph's
// servers pass them to the graph. threadConfig is what headerConfig
// gives for kw, made from the configurable values at hand.
func (req *runRequest) kwargs(r *http.Request, temporary bool) (kw runKwargs, threadConfig json.RawMessage, err error) {
	kw, cfg, configurable, encoded, err := req.buildKwargs(r, temporary)
	if err != nil {
		return runKwargs{}, nil, err
	}
	if otherConfigurableKey(cfg) {
		// Decoding the config as headerConfig does merges this key's
		// values with configurable's: left to it.
		return kw, headerConfig(kw), nil
	}
	return kw, headerValues(configurable, encoded), nil
}

// otherConfigurableKey says whether a config has a key other than
// "configurable" that decoding it into a struct takes as configurable
// (encoding/json matches keys regardless of case).
func otherConfigurableKey[V any](cfg map[string]V) bool {
	for k := range cfg {
		if k != "configurable" && strings.EqualFold(k, "configurable") {
			return true
		}
	}
	return false
}

// headerValues is headerConfig's answer for a run whose
// config.configurable is configurable, encoded as JSON: the values of
// its keys that headers give.
func headerValues(configurable map[string]any, encoded []byte) json.RawMessage {
	if len(configurable) == 0 {
		return nil
	}
	all := true
	for k := range configurable {
		if !headerKey(k) {
			all = false
			break
		}
	}
	if all {
		b := make([]byte, 0, len(`{"configurable":}`)+len(encoded))
		b = append(b, `{"configurable":`...)
		b = append(b, encoded...)
		return append(b, '}')
	}
	return headerOnly(configurable)
}

// headerOnly is {"configurable": configurable's values whose keys headers
// give}, or nil when there are none.
func headerOnly(configurable map[string]any) json.RawMessage {
	kept := map[string]any{}
	for k, v := range configurable {
		if headerKey(k) {
			kept[k] = v
		}
	}
	if len(kept) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"configurable": kept})
	return b
}

// headerKey says whether a configurable key is one a thread keeps: one
// that request headers give.
func headerKey(k string) bool { return strings.HasPrefix(k, "x-") || k == "user-agent" }

// buildKwargs is kwargs, with the config it stores (decoded), its
// configurable values and their JSON (nil when there are none).
func (req *runRequest) buildKwargs(r *http.Request, temporary bool) (kw runKwargs, cfg map[string]json.RawMessage, configurable map[string]any, encoded []byte, err error) {
	fail := func(err error) (runKwargs, map[string]json.RawMessage, map[string]any, []byte, error) {
		return runKwargs{}, nil, nil, nil, err
	}
	modes, err := streamModeList(req.StreamMode)
	if err != nil {
		return fail(err)
	}
	kw = runKwargs{
		Input: req.Input, Command: req.Command, Context: req.Context, StreamMode: modes, Webhook: req.Webhook,
		Temporary: temporary, Subgraphs: req.StreamSubgraphs, Resumable: req.StreamResumable,
		CheckpointID: req.CheckpointID, Durability: req.Durability, OnDisconnect: req.OnDisconnect,
	}
	if req.AfterSeconds != nil {
		kw.AfterSeconds = *req.AfterSeconds
	}
	if req.Checkpoint != nil {
		kw.CheckpointID, kw.CheckpointNS = req.Checkpoint.CheckpointID, req.Checkpoint.CheckpointNS
	}
	if req.CheckpointDuring != nil && !*req.CheckpointDuring && kw.Durability == "" {
		kw.Durability = string(graph.DurabilityExit)
	}
	if kw.InterruptBefore, err = nodeList(req.InterruptBefore, "interrupt_before"); err != nil {
		return fail(err)
	}
	if kw.InterruptAfter, err = nodeList(req.InterruptAfter, "interrupt_after"); err != nil {
		return fail(err)
	}
	if len(kw.Context) == 0 {
		kw.Context = json.RawMessage("{}")
	}
	noConfig := len(req.Config) == 0 || string(req.Config) == "null"
	if !noConfig {
		cfg = map[string]json.RawMessage{}
		if err := json.Unmarshal(req.Config, &cfg); err != nil {
			return fail(api.Invalid(api.TypeIssue("object", kindOf(req.Config), "config")))
		}
	}
	configurable = map[string]any{}
	if raw, ok := cfg["configurable"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &configurable); err != nil {
			return fail(api.Invalid(api.TypeIssue("object", kindOf(raw), "config", "configurable")))
		}
	}
	for k, vs := range r.Header {
		// Most headers are neither: skip them before lowering their names.
		if !(len(k) >= 2 && k[0]|0x20 == 'x' && k[1] == '-') && !strings.EqualFold(k, "user-agent") {
			continue
		}
		if k == "User-Agent" {
			k = "user-agent" // as net/http spells it, lowered without a copy
		} else {
			k = strings.ToLower(k)
		}
		if (strings.HasPrefix(k, "x-") && k != "x-api-key" && k != "x-tenant-id" && k != "x-service-key") || k == "user-agent" {
			configurable[k] = strings.Join(vs, ", ")
		}
	}
	if noConfig {
		// No config but the headers' values, all strings: encoded as
		// json.Marshal encodes the config below, without its reflection.
		if len(configurable) > 0 {
			encoded = appendStringMap(nil, configurable)
			b := make([]byte, 0, len(`{"configurable":}`)+len(encoded))
			b = append(b, `{"configurable":`...)
			b = append(b, encoded...)
			kw.Config = append(b, '}')
		} else {
			kw.Config = json.RawMessage("{}")
		}
		return kw, nil, configurable, encoded, nil
	}
	if len(configurable) > 0 {
		if encoded, err = json.Marshal(configurable); err != nil {
			return fail(err)
		}
		cfg["configurable"] = encoded
	}
	if kw.Config, err = json.Marshal(cfg); err != nil {
		return fail(err)
	}
	return kw, cfg, configurable, encoded, nil
}

// appendStringMap appends m, whose values are all strings, as json.Marshal
// encodes it: keys sorted, strings escaped as it escapes them.
func appendStringMap(b []byte, m map[string]any) []byte {
	b, _ = jsonx.AppendObject(b, m, func(b []byte, _ string, v any) ([]byte, error) {
		return jsonx.AppendString(b, v.(string), true), nil
	})
	return b
}

// headerConfig is the part of a run's config a thread keeps: the
// configurable values that came from request headers.
func headerConfig(kw runKwargs) json.RawMessage {
	var cfg struct {
		Configurable map[string]any `json:"configurable"`
	}
	_ = json.Unmarshal(kw.Config, &cfg)
	return headerOnly(cfg.Configurable)
}

// commandUpdate turns a command into the graph's input: a resume (by
// interrupt id when the value is a map of interrupt ids), an update of
// the state, and nodes (or Sends) to go to, applied as LangGraph applies a
// Command given as input (graph.AsCommand).
func commandUpdate(g *graph.Graph, c *commandJSON) (graph.Update, error) {
	var u graph.Update
	if len(c.Update) > 0 && string(c.Update) != "null" {
		up, err := decodeCommandUpdate(g, c.Update)
		if err != nil {
			return graph.Update{}, err
		}
		u = u.And(up)
	}
	if len(c.Goto) > 0 && string(c.Goto) != "null" {
		gt, err := decodeGoto(g, c.Goto)
		if err != nil {
			return graph.Update{}, err
		}
		u = u.And(gt)
	}
	if len(c.Resume) == 0 {
		// An update or a goto alone: applied between steps, not as new
		// input through START.
		return graph.AsCommand(u), nil
	}
	var byID map[string]any
	if json.Unmarshal(c.Resume, &byID) == nil && len(byID) > 0 && allInterruptIDs(byID) {
		return graph.ResumeByID(byID).And(u), nil
	}
	var v any
	if err := json.NewDecoder(bytes.NewReader(c.Resume)).Decode(&v); err != nil {
		return graph.Update{}, fmt.Errorf("%w: command.resume: %v", graph.ErrInvalidInput, err)
	}
	return graph.Resume(v).And(u), nil
}

func allInterruptIDs(m map[string]any) bool {
	for k := range m {
		if !graph.IsInterruptID(k) {
			return false
		}
	}
	return true
}

// decodeCommandUpdate reads command.update: an object, or a list of
// [key, value] pairs (so that a key may be written twice).
func decodeCommandUpdate(g *graph.Graph, raw json.RawMessage) (graph.Update, error) {
	if raw[0] != '[' {
		return g.DecodeUpdate(raw)
	}
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return graph.Update{}, fmt.Errorf("%w: command.update: want an object or a list of [key, value] pairs: %v", graph.ErrInvalidInput, err)
	}
	u := graph.Input()
	for _, p := range pairs {
		var key string
		if err := json.Unmarshal(p[0], &key); err != nil {
			return graph.Update{}, fmt.Errorf("%w: command.update: a key must be a string: %v", graph.ErrInvalidInput, err)
		}
		obj, err := json.Marshal(map[string]json.RawMessage{key: p[1]})
		if err != nil {
			return graph.Update{}, err
		}
		w, err := g.DecodeUpdate(obj)
		if err != nil {
			return graph.Update{}, err
		}
		u = u.And(w)
	}
	return u, nil
}

// decodeGoto reads command.goto: a node, a Send ({"node", "input"}), or a
// list of them.
func decodeGoto(g *graph.Graph, raw json.RawMessage) (graph.Update, error) {
	var items []json.RawMessage
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &items); err != nil {
			return graph.Update{}, fmt.Errorf("%w: command.goto: %v", graph.ErrInvalidInput, err)
		}
	} else {
		items = []json.RawMessage{raw}
	}
	var u graph.Update
	for _, it := range items {
		var node string
		if json.Unmarshal(it, &node) == nil {
			u = u.And(graph.Goto(node))
			continue
		}
		var send struct {
			Node  string          `json:"node"`
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(it, &send); err != nil || send.Node == "" {
			return graph.Update{}, fmt.Errorf("%w: command.goto: want a node name or {\"node\", \"input\"}", graph.ErrInvalidInput)
		}
		arg, err := g.DecodeUpdate(send.Input)
		if err != nil {
			return graph.Update{}, err
		}
		u = u.And(graph.SendTo(graph.Send{Node: send.Node, Arg: arg}))
	}
	return u, nil
}
