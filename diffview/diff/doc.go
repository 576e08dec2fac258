// Package diff is the pure core of the review: it turns a file's base and staged contents into
// hunks the developer can accept, reject, split, select line by line or edit, applies those
// decisions back onto the base, merges three versions, and writes git-style patches. It has no
// terminal and no global state, so session imports it without linking the review browser.
//
//   - DiffLines and Compute: line diff (go-diff line mode, anchored on unique lines for large
//     inputs, within a time budget with a correct coarser fallback) cut into hunks with stable ids
//     (Group).
//   - Split, SelectLines, ParseEdit/EditText: `git add -p`'s s, line selection and e.
//   - Apply and Resolve: base + accepted hunks, byte for byte.
//   - Merge3: the agent's changes as hunks on the host's current file, with conflicts.
//   - WordDiff and Pairs: intra-line highlights.
//   - WritePatch, QuotePath, BlobID, IsBinary, StatOf/WriteStat: git-style patches (text and
//     binary literals) and diffstat.
//   - Escape, EscapeLine and EscapePieces: what the agent wrote, shown as the bytes it is: control
//     characters, escape sequences, bidi and zero-width characters and invalid UTF-8 visible,
//     never interpreted. (internal/quote is the quoting of names in shadow's one-line messages.)
package diff
