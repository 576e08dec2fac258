package termfilter

import "io"

// Of the queries the filter drops, one is answered by the filter itself, on
// the program's own terminal input: the primary device attributes request
// (DA1: CSI c, CSI 0 c, and its old form DECID, ESC Z). Programs send it
// after the queries a terminal may not know (the kitty keyboard, the
// background colour, XTVERSION), because every terminal answers it, and wait
// for its answer before they draw: Gemini CLI a second. The answer names a
// VT220 with ANSI colour, nothing of the user's terminal, and it goes to the
// jailed program's pty, which ends with the jail: nothing lands in the
// user's shell.

// DeviceAttributes is the filter's answer to DA1.
const DeviceAttributes = "\x1b[?62;22c"

// maxPendingAnswers bounds the answers queued and not yet written; past it
// further queries go unanswered.
const maxPendingAnswers = 16

// AnswerTo makes the filter answer DA1 on w, the input of the program whose
// output it filters. The answers are written by a goroutine of their own, so
// a program that never reads its input cannot stall its own output; Close
// ends it. Call it before the first Write.
func (f *Writer) AnswerTo(w io.Writer) {
	f.answers, f.answersDone = make(chan struct{}, maxPendingAnswers), make(chan struct{})
	go func(queued <-chan struct{}, done chan<- struct{}) {
		defer close(done)
		for range queued {
			if _, err := io.WriteString(w, DeviceAttributes); err != nil {
				return // the queue fills and later queries go unanswered
			}
		}
	}(f.answers, f.answersDone)
}

// answer queues an answer to DA1 when the filter answers and the queue has
// room.
func (f *Writer) answer() {
	if f.answers == nil {
		return
	}
	select {
	case f.answers <- struct{}{}:
	default:
	}
}

// isDA1 reports whether a complete control sequence is the primary device
// attributes request: final 'c', no private marker, no intermediate, no
// parameter but 0.
func isDA1(seq []byte) bool {
	h, ok := parseControl(seq[introLen(seq):])
	return ok && h.Final == 'c' && h.Prefix == 0 && len(h.Inter) == 0 && (len(h.Params) == 0 || string(h.Params) == "0")
}
