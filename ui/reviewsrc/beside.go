package reviewsrc

import (
	"errors"

	"github.com/shadow-sandbox/shadow/session"
)

// BesideSource is a review source over a session reviewed beside another of its project (`shadow
// review --with OTHER`): it is a diffview.Taker, which stages the other session's version of a
// file in this one (Session.Take), to keep the better of two agents' work file by file.
type BesideSource struct {
	*Source
	other *session.Session
}

// Beside is src reviewed beside other.
func Beside(src *Source, other *session.Session) *BesideSource {
	return &BesideSource{Source: src, other: other}
}

// Other names the other session.
func (b *BesideSource) Other() string { return b.other.Label() }

// TakeOther stages the other session's version of path in the reviewed session, as a step of
// its own.
func (b *BesideSource) TakeOther(path string) error {
	b.mu.Lock()
	s := b.sess
	b.mu.Unlock()
	if b.ReadOnly() != "" {
		return errors.New(b.ReadOnly())
	}
	_, err := s.Take(b.other, []string{path})
	return err
}
