// Package diffview is the review browser (bubbletea): the changed files as a tree, the diff of
// the selected one with word highlights and syntax colours, decisions per hunk, file or line,
// `$EDITOR` edits, search, apply and rollback from the screen. It reads and acts on a Source,
// which the session implements, and does no I/O in Update.
//
// The pure core it shows (line diff, hunks, words, patches, the three-way merge, escaping) is the
// subpackage diffview/diff.
package diffview
