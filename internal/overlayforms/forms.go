// Package overlayforms writes every form an entry of an overlay layer can take, for the tests of
// the layer's readers (sandbox/layers, session), which must all read each form alike.
package overlayforms

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Form is one form of a layer's entry.
type Form struct {
	// Name says what the entry is, e.g. "zero-size file with user.overlay.whiteout".
	Name string
	// Path is the entry's path in the layer, one component.
	Path string
	// Kind is what the overlay makes of it, as sandbox/layers names its kinds (Kind.String).
	Kind string
	// make writes the entry into the layer dir.
	make func(p string) error
}

// IsDir reports whether the form is a directory (merged or opaque): the project's directory at
// the same path is then what a fixture puts under it.
func (f Form) IsDir() bool { return f.Kind == "directory" || f.Kind == "opaque directory" }

// Namespaces are the xattr namespaces of the overlay's marks.
var Namespaces = []string{"trusted.", "user."}

// All lists every form: the plain kinds, the 0/0 character device, and for each namespace the
// whiteout in file form (and a non-empty file carrying the mark, which is no whiteout), the
// opaque marks "y" and "x" and a redirect; and symlinks to a whiteout and to an opaque
// directory, which are symlinks: no reader follows them.
func All() []Form {
	dir := func(p string) error { return os.Mkdir(p, 0o755) }
	withXattr := func(mk func(string) error, attr, value string) func(string) error {
		return func(p string) error {
			if err := mk(p); err != nil {
				return err
			}
			return unix.Lsetxattr(p, attr, []byte(value), 0)
		}
	}
	file := func(data string) func(string) error {
		return func(p string) error { return os.WriteFile(p, []byte(data), 0o644) }
	}
	forms := []Form{
		{Name: "regular file", Path: "file", Kind: "file", make: file("staged\n")},
		{Name: "empty regular file", Path: "empty", Kind: "file", make: file("")},
		{Name: "symlink", Path: "link", Kind: "symlink", make: func(p string) error { return os.Symlink("file", p) }},
		{Name: "directory", Path: "dir", Kind: "directory", make: dir},
		{Name: "FIFO", Path: "fifo", Kind: "other", make: func(p string) error { return unix.Mkfifo(p, 0o644) }},
		{Name: "character device 0/0", Path: "wh-chr", Kind: "whiteout", make: func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o600, 0) }},
		{Name: "symlink to a whiteout", Path: "link-wh", Kind: "symlink", make: func(p string) error { return os.Symlink("wh-chr", p) }},
		{Name: "symlink to an opaque directory", Path: "link-opq", Kind: "symlink", make: func(p string) error { return os.Symlink("opq-user.", p) }},
	}
	for _, ns := range Namespaces {
		forms = append(forms,
			Form{Name: "zero-size file with " + ns + "overlay.whiteout", Path: "wh-file-" + ns, Kind: "whiteout", make: withXattr(file(""), ns+"overlay.whiteout", "")},
			Form{Name: "non-empty file with " + ns + "overlay.whiteout", Path: "full-file-" + ns, Kind: "file", make: withXattr(file("x\n"), ns+"overlay.whiteout", "")},
			Form{Name: "directory with " + ns + "overlay.opaque=y", Path: "opq-" + ns, Kind: "opaque directory", make: withXattr(dir, ns+"overlay.opaque", "y")},
			Form{Name: "directory with " + ns + "overlay.opaque=x", Path: "opqx-" + ns, Kind: "directory", make: withXattr(dir, ns+"overlay.opaque", "x")},
			Form{Name: "directory with " + ns + "overlay.redirect", Path: "redir-" + ns, Kind: "directory", make: withXattr(dir, ns+"overlay.redirect", "/elsewhere")},
		)
	}
	return forms
}

// Write writes every form into the layer directory layer, and into the project directory project
// (when not "") what each hides or shows: under a directory form the directory with a file
// (below/file) and an empty directory (below/dir), at every other form a file.
func Write(layer, project string, forms []Form) error {
	for _, f := range forms {
		if err := f.make(filepath.Join(layer, f.Path)); err != nil {
			return err
		}
		if project == "" {
			continue
		}
		p := filepath.Join(project, f.Path)
		if f.IsDir() {
			if err := os.MkdirAll(filepath.Join(p, "below", "dir"), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(p, "below", "file"), []byte("project\n"), 0o644); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, []byte("project\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}
