package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// askModel is an app at w×h with the agent's pane up and qs open, each question's answer
// recorded in got as "id:answer".
func askModel(t *testing.T, w, h int, got *[]string, qs ...proxy.Question) Model {
	t.Helper()
	m := newModel(t, testOptions(nil, idleAgent).withReview(t))
	m = step(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	m.phase = phaseAgent
	for i, q := range qs {
		id := uint64(i + 1)
		m.asks = append(m.asks, NetQuestion{ID: id, Question: q, Deadline: fixedNow.Add(30 * time.Second),
			answer: func(a proxy.Answer) { *got = append(*got, string(rune('0'+id))+":"+string(rune('0'+a))) }})
	}
	return m
}

// answerKey presses k and runs what it answers.
func answerKey(t *testing.T, m Model, k string) Model {
	t.Helper()
	next, cmd := m.Update(press(k))
	if cmd != nil {
		cmd()
	}
	return next.(Model)
}

// TestAskKeyAnswersOnlyAShownQuestion: an answer key answers the question the screen showed
// when it was pressed: a key pressed twice (or a question that went by itself under the key)
// does not answer the question that took its place unseen; nor does a key answer a question
// whose dialog does not fit and is not shown.
func TestAskKeyAnswersOnlyAShownQuestion(t *testing.T) {
	var got []string
	m := askModel(t, 100, 30, &got, proxy.Question{Host: "a.test", Port: 443, Method: "CONNECT"},
		proxy.Question{Host: "b.test", Port: 443, Method: "CONNECT"})
	_ = screenText(m)
	m = answerKey(t, m, "s")
	m = answerKey(t, m, "s") // the same instant: b.test was never on the screen for a reader
	if len(got) != 1 {
		t.Errorf("two presses of s in the same instant answered %v: the second question was not seen", got)
	}

	got = nil
	m = askModel(t, 100, 30, &got, proxy.Question{Host: "a.test", Port: 443, Method: "CONNECT"},
		proxy.Question{Host: "b.test", Port: 443, Method: "CONNECT"})
	_ = screenText(m)
	m = step(t, m, askMsg{ev: AskEvent{Done: 1}, run: m.run}) // a.test's time ran out under the key
	m = answerKey(t, m, "s")
	if len(got) != 0 {
		t.Errorf("a key meant for a question that went answered the next one, unseen: %v", got)
	}

	got = nil
	m = askModel(t, 100, 30, &got, proxy.Question{Host: strings.Repeat("a.", 4000) + "test", Port: 443, Method: "CONNECT"})
	s := screenText(m)
	m = answerKey(t, m, "s")
	if len(got) != 0 && !strings.Contains(s, "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.test") {
		t.Errorf("s answered %v a question whose destination the screen did not show:\n%s", got, s)
	}
}

// TestAskHoldsNotTheMenu: while a question is up, the menu still opens (and stops the agent):
// a jailed agent that asks one question per destination, without end, does not hold the
// keyboard.
func TestAskHoldsNotTheMenu(t *testing.T) {
	var got []string
	m := askModel(t, 100, 30, &got, proxy.Question{Host: "a.test", Port: 443, Method: "CONNECT"})
	m = answerKey(t, m, "ctrl+]")
	if !m.menu {
		t.Errorf("the menu key while a question is up: no menu, the note %q", m.note)
	}
}
