package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Call is one tool call the scripted model makes: the tool's name as the
// agent offers it, and its arguments.
type Call struct {
	Tool string
	Args map[string]any
}

// Request is what the server saw of one model request.
type Request struct {
	API         string   // "responses", "chat", "anthropic", "gemini"
	Path        string   //
	Stream      bool     //
	Tools       []string // the tools the agent offered
	ToolResults int      // tool results in the conversation so far
	Answered    string   // the tool called, or "text"
}

// ModelServer is a scripted model on the host's loopback. Asked for a turn
// that offers tools, it makes the call Calls[k], k the number of tool
// results already in the conversation; after the last one it answers Final
// and the agent's turn ends. A request without the scripted tool (an agent's
// side requests: titles, summaries) gets Final as plain text. It speaks the
// OpenAI Responses and Chat Completions APIs (streaming), Anthropic Messages
// (streaming or not) and Gemini generateContent (streaming or not).
type ModelServer struct {
	Calls []Call
	Final string

	URL  string // http://127.0.0.1:PORT
	Port string

	mu   sync.Mutex
	reqs []Request
}

// NewModelServer starts the server; it stops with the test.
func NewModelServer(t testing.TB, final string, calls ...Call) *ModelServer {
	t.Helper()
	m := &ModelServer{Calls: calls, Final: final}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	_, m.Port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return m
}

// Requests returns what the server saw so far.
func (m *ModelServer) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// Called reports whether every scripted call was made and the final answer
// given to a turn that offered the tools.
func (m *ModelServer) Called() bool {
	m.mu.Lock()
	calls := m.Calls
	m.mu.Unlock()
	made := map[string]int{}
	final := false
	for _, r := range m.Requests() {
		made[r.Answered]++
		if r.Answered == "text" && r.ToolResults >= len(calls) && len(r.Tools) > 0 {
			final = true
		}
	}
	for _, c := range calls {
		if made[c.Tool] == 0 {
			return false
		}
	}
	return final
}

// Next scripts the agent's next prompt: the calls it makes after those scripted so far (the
// conversation holds their results), then final as its answer.
func (m *ModelServer) Next(final string, calls ...Call) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls = append(slices.Clip(m.Calls), calls...)
	m.Final = final
}

// final is the answer after the last scripted call.
func (m *ModelServer) final() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.Final
}

func (m *ModelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil {
		// Model lists and the like: an empty answer of the right shape.
		m.mu.Lock()
		m.reqs = append(m.reqs, Request{API: r.Method, Path: r.URL.String()})
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[],"models":[]}`)
		return
	}
	path := r.URL.Path
	switch {
	case strings.HasSuffix(path, "/responses"):
		m.responses(w, req)
	case strings.HasSuffix(path, "/chat/completions"):
		m.chat(w, req)
	case strings.HasSuffix(path, "/messages/count_tokens"):
		io.WriteString(w, `{"input_tokens":1}`)
	case strings.HasSuffix(path, "/messages"):
		m.anthropic(w, req)
	case strings.Contains(path, ":countTokens"):
		io.WriteString(w, `{"totalTokens":1}`)
	case strings.Contains(path, ":streamGenerateContent") || strings.Contains(path, ":generateContent"):
		m.gemini(w, r, req)
	default:
		http.NotFound(w, r)
	}
}

// next records a request and decides its answer: the scripted call, or
// nil for the final text.
func (m *ModelServer) next(api, path string, stream bool, tools []string, results int) *Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := Request{API: api, Path: path, Stream: stream, Tools: tools, ToolResults: results, Answered: "text"}
	var c *Call
	if results < len(m.Calls) {
		want := m.Calls[results]
		for _, t := range tools {
			if t == want.Tool {
				c = &want
				rec.Answered = want.Tool
			}
		}
	}
	m.reqs = append(m.reqs, rec)
	return c
}

func argsJSON(c *Call) string {
	b, _ := json.Marshal(c.Args)
	return string(b)
}

func sse(w http.ResponseWriter) func(event string, v any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	return func(event string, v any) {
		b, _ := json.Marshal(v)
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func obj(v any) map[string]any {
	o, _ := v.(map[string]any)
	return o
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// toolNames reads the names of a request's tools, whichever API's shape.
func toolNames(req map[string]any) []string {
	var out []string
	for _, t := range list(req["tools"]) {
		to := obj(t)
		switch {
		case str(to["name"]) != "":
			out = append(out, str(to["name"]))
		case obj(to["function"]) != nil:
			out = append(out, str(obj(to["function"])["name"]))
		}
		for _, d := range list(to["functionDeclarations"]) {
			out = append(out, str(obj(d)["name"]))
		}
	}
	return out
}

// responses answers the OpenAI Responses API (codex).
func (m *ModelServer) responses(w http.ResponseWriter, req map[string]any) {
	results := 0
	for _, it := range list(req["input"]) {
		switch str(obj(it)["type"]) {
		case "function_call_output", "custom_tool_call_output":
			results++
		}
	}
	c := m.next("responses", "/responses", true, toolNames(req), results)
	send := sse(w)
	id := fmt.Sprintf("resp_%d", len(m.Requests()))
	event := func(typ string, v map[string]any) {
		v["type"] = typ
		send(typ, v)
	}
	event("response.created", map[string]any{"response": map[string]any{"id": id}})
	var item map[string]any
	switch {
	case c != nil && c.Args["input"] != nil && len(c.Args) == 1 && isCustom(req, c.Tool):
		// A freeform tool (codex's apply_patch): the input as it is.
		item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + id, "call_id": "call_" + id,
			"name": c.Tool, "input": c.Args["input"], "status": "completed"}
	case c != nil:
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id,
			"name": c.Tool, "arguments": argsJSON(c), "status": "completed"}
	default:
		item = map[string]any{"type": "message", "role": "assistant", "id": "msg_" + id, "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": m.final(), "annotations": []any{}}}}
	}
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	event("response.completed", map[string]any{"response": map[string]any{"id": id,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})
}

func isCustom(req map[string]any, name string) bool {
	for _, t := range list(req["tools"]) {
		if to := obj(t); str(to["name"]) == name {
			return str(to["type"]) == "custom"
		}
	}
	return false
}

// chat answers the OpenAI Chat Completions API, streaming (opencode).
func (m *ModelServer) chat(w http.ResponseWriter, req map[string]any) {
	results := 0
	for _, msg := range list(req["messages"]) {
		if str(obj(msg)["role"]) == "tool" {
			results++
		}
	}
	c := m.next("chat", "/chat/completions", req["stream"] == true, toolNames(req), results)
	id := fmt.Sprintf("chatcmpl-%d", len(m.Requests()))
	model := str(req["model"])
	var delta map[string]any
	finish := "stop"
	if c != nil {
		delta = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": "call_" + id, "type": "function",
			"function": map[string]any{"name": c.Tool, "arguments": argsJSON(c)}}}}
		finish = "tool_calls"
	} else {
		delta = map[string]any{"role": "assistant", "content": m.final()}
	}
	usage := map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
	if req["stream"] != true {
		msg := delta
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	send := sse(w)
	send("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}})
	send("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// anthropic answers the Anthropic Messages API (Claude Code).
func (m *ModelServer) anthropic(w http.ResponseWriter, req map[string]any) {
	results := 0
	for _, msg := range list(req["messages"]) {
		for _, b := range list(obj(msg)["content"]) {
			if str(obj(b)["type"]) == "tool_result" {
				results++
			}
		}
	}
	stream := req["stream"] == true
	c := m.next("anthropic", "/messages", stream, toolNames(req), results)
	id := fmt.Sprintf("msg_%d", len(m.Requests()))
	model := str(req["model"])
	usage := map[string]any{"input_tokens": 1, "output_tokens": 1}
	var block map[string]any
	stop := "end_turn"
	if c != nil {
		block = map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": c.Tool, "input": c.Args}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": m.final()}
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	send := sse(w)
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	if c != nil {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": c.Tool, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": argsJSON(c)}})
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": m.final()}})
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 1}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// gemini answers Gemini's generateContent and streamGenerateContent (SSE).
func (m *ModelServer) gemini(w http.ResponseWriter, r *http.Request, req map[string]any) {
	results := 0
	for _, ct := range list(req["contents"]) {
		for _, p := range list(obj(ct)["parts"]) {
			if obj(p)["functionResponse"] != nil {
				results++
			}
		}
	}
	stream := strings.Contains(r.URL.Path, ":streamGenerateContent")
	c := m.next("gemini", r.URL.Path, stream, toolNames(req), results)
	var part map[string]any
	switch {
	case c != nil:
		part = map[string]any{"functionCall": map[string]any{"name": c.Tool, "args": c.Args}}
	case obj(req["generationConfig"])["responseJsonSchema"] != nil || obj(req["generationConfig"])["responseSchema"] != nil:
		// The CLI's own checks (who speaks next): the user.
		part = map[string]any{"text": `{"reasoning": "the task is done", "next_speaker": "user"}`}
	default:
		part = map[string]any{"text": m.final()}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		"modelVersion":  "scripted",
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	sse(w)("", resp)
}
