package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jsonReader walks a JSON document token by token so that parsers can record
// the line of each key they keep while decoding only the parts they need.
type jsonReader struct {
	path string
	data []byte
	dec  *json.Decoder
	lc   *lineCounter
}

func newJSONReader(path string, data []byte) *jsonReader {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &jsonReader{path: path, data: data, dec: dec, lc: newLineCounter(data)}
}

// line is the line of the decoder's current position.
func (r *jsonReader) line() int { return r.lc.at(r.dec.InputOffset()) }

// fail wraps a decoding error with the file and the line it happened on.
func (r *jsonReader) fail(err error) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		return err
	}
	off := r.dec.InputOffset()
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case errors.Is(err, io.EOF):
		err = io.ErrUnexpectedEOF
		off = int64(len(r.data))
	}
	return &ParseError{Path: r.path, Line: lineAt(r.data, off), Err: fmt.Errorf("invalid JSON: %w", err)}
}

func (r *jsonReader) token() (json.Token, error) {
	t, err := r.dec.Token()
	if err != nil {
		return nil, r.fail(err)
	}
	return t, nil
}

// skipRest consumes the remainder of a value whose first token was t.
func (r *jsonReader) skipRest(t json.Token) error {
	d, ok := t.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return nil
	}
	depth := 1
	for depth > 0 {
		t, err := r.token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// skip consumes one whole value.
func (r *jsonReader) skip() error {
	t, err := r.token()
	if err != nil {
		return err
	}
	return r.skipRest(t)
}

// object reads an object, calling fn for each key with the key's line; fn must
// consume the value. A value that is not an object is skipped and reported as false.
func (r *jsonReader) object(fn func(key string, line int) error) (bool, error) {
	t, err := r.token()
	if err != nil {
		return false, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return false, r.skipRest(t)
	}
	for r.dec.More() {
		kt, err := r.token()
		if err != nil {
			return true, err
		}
		key, ok := kt.(string)
		if !ok {
			return true, r.fail(fmt.Errorf("object key is not a string"))
		}
		if err := fn(key, r.line()); err != nil {
			return true, err
		}
	}
	_, err = r.token() // closing brace
	return true, err
}

// scalar reads one value and returns it if it is a string; other values are skipped.
func (r *jsonReader) str() (string, bool, error) {
	t, err := r.token()
	if err != nil {
		return "", false, err
	}
	if s, ok := t.(string); ok {
		return s, true, nil
	}
	return "", false, r.skipRest(t)
}

// value reads one scalar value: string, bool, json.Number or nil; composite values are skipped.
func (r *jsonReader) value() (any, error) {
	t, err := r.token()
	if err != nil {
		return nil, err
	}
	if _, ok := t.(json.Delim); ok {
		return nil, r.skipRest(t)
	}
	return t, nil
}

// stringMap reads an object of string values; non-string values are ignored.
// lines, when not nil, receives the line of each kept key.
func (r *jsonReader) stringMap(lines map[string]int) (map[string]string, error) {
	m := map[string]string{}
	_, err := r.object(func(key string, line int) error {
		s, ok, err := r.str()
		if ok {
			m[key] = s
			if lines != nil {
				lines[key] = line
			}
		}
		return err
	})
	return m, err
}

// stringList reads an array of strings; non-string elements are ignored.
func (r *jsonReader) stringList() ([]string, bool, error) {
	t, err := r.token()
	if err != nil {
		return nil, false, err
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return nil, false, r.skipRest(t)
	}
	list := []string{}
	for r.dec.More() {
		s, ok, err := r.str()
		if err != nil {
			return list, true, err
		}
		if ok {
			list = append(list, s)
		}
	}
	_, err = r.token()
	return list, true, err
}

// end checks that nothing but white space follows the top-level value.
func (r *jsonReader) end() error {
	if _, err := r.dec.Token(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("data after the top-level value")
		}
		return r.fail(err)
	}
	return nil
}
