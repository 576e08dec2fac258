package agenthost

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// Question is a request the jail's proxy has off its allow-list, put to the attached app
// (SPEC §14, asking): the app shows it and sends the user's answer back.
type Question struct {
	ID uint64 `json:"id"`
	proxy.Question
	// Deadline is when the proxy stops waiting and refuses the request.
	Deadline time.Time `json:"deadline"`
}

// answer is the payload of an answer frame.
type answer struct {
	ID     uint64 `json:"id"`
	Answer string `json:"answer"`
}

// answerNames are the answers as an answer frame spells them.
var answerNames = map[proxy.Answer]string{proxy.AnswerOnce: "once", proxy.AnswerSession: "session", proxy.AnswerDeny: "deny"}

// openQuestion is a question the host waits on.
type openQuestion struct {
	q      Question
	answer chan proxy.Answer // buffered: the first answer is kept, later ones dropped
}

// askNetwork is the proxy's Asker in the agent host: it puts q to the attached client, or to
// the next one that attaches, and waits for its answer until the proxy gives up (ctx).
func (h *agentHost) askNetwork(ctx context.Context, pq proxy.Question) proxy.Answer {
	oq := &openQuestion{q: Question{Question: pq}, answer: make(chan proxy.Answer, 1)}
	if d, ok := ctx.Deadline(); ok {
		oq.q.Deadline = d
	}
	h.mu.Lock()
	h.lastAsk++
	oq.q.ID = h.lastAsk
	if h.asked == nil {
		h.asked = map[uint64]*openQuestion{}
	}
	h.asked[oq.q.ID] = oq
	if h.client != nil {
		h.sendQuestionLocked(oq.q)
	}
	h.mu.Unlock()
	a := proxy.AnswerDeny
	select {
	case a = <-oq.answer:
	case <-ctx.Done():
	}
	h.mu.Lock()
	delete(h.asked, oq.q.ID)
	if h.client != nil {
		h.sendLocked(frameAskDone, []byte(strconv.FormatUint(oq.q.ID, 10)))
	}
	h.mu.Unlock()
	return a
}

func (h *agentHost) sendQuestionLocked(q Question) {
	data, err := json.Marshal(q)
	if err == nil {
		h.sendLocked(frameAsk, data)
	}
}

// sendQuestionsLocked sends a client that attached the questions still open, oldest first.
func (h *agentHost) sendQuestionsLocked() {
	ids := make([]uint64, 0, len(h.asked))
	for id := range h.asked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if h.client == nil {
			return
		}
		h.sendQuestionLocked(h.asked[id].q)
	}
}

// answered takes the client's answer to an open question; an answer to no open question (it
// timed out meanwhile) or in no known form is dropped.
func (h *agentHost) answered(p []byte) {
	var a answer
	if json.Unmarshal(p, &a) != nil {
		return
	}
	for ans, name := range answerNames {
		if name != a.Answer {
			continue
		}
		h.mu.Lock()
		oq := h.asked[a.ID]
		h.mu.Unlock()
		if oq != nil {
			select {
			case oq.answer <- ans:
			default:
			}
		}
	}
}

// Answer sends the user's answer to the question id.
func (c *Client) Answer(id uint64, a proxy.Answer) error {
	data, err := json.Marshal(answer{ID: id, Answer: answerNames[a]})
	if err != nil {
		return err
	}
	return c.send(frameAnswer, data)
}

// asked hands a question frame's payload to Asked.
func (c *Client) asked(p []byte) {
	var q Question
	if json.Unmarshal(p, &q) == nil && c.Asked != nil {
		c.Asked(q)
	}
}

// askDone hands an ask-done frame's payload to AskDone.
func (c *Client) askDone(p []byte) {
	if id, err := strconv.ParseUint(string(p), 10, 64); err == nil && c.AskDone != nil {
		c.AskDone(id)
	}
}
