// Package diffview turns a file's base and staged contents into hunks the
// developer can accept, reject, split, select line by line or edit, applies
// those decisions back onto the base, writes git-style patches, and shows it
// all in the review browser.
//
// The pure core has no terminal and no global state:
//
//   - DiffLines and Compute: line diff (go-diff line mode, anchored on
//     unique lines for large inputs, within a time budget with a correct
//     coarser fallback) cut into hunks with stable ids (Group).
//   - Split, SelectLines, ParseEdit/EditText: `git add -p`'s s, line
//     selection and e.
//   - Apply and Resolve: base + accepted hunks, byte for byte.
//   - WordDiff and Pairs: intra-line highlights.
//   - WritePatch, QuotePath, BlobID, IsBinary, StatOf/WriteStat: git-style
//     patches (text and binary literals) and diffstat.
//   - Escape and EscapePieces: everything shown on a terminal goes through
//     them, so control characters, escape sequences, bidi and zero-width
//     characters and invalid UTF-8 are visible, never interpreted.
//
// The review browser (Model, KeyMap, Styles, App) reads and acts on a
// Source, which the session implements; it does no I/O in Update.
package diffview
