package diffview

import (
	"strings"
)

// treeRow is one row of the file tree: a directory, or a file (file >= 0).
type treeRow struct {
	depth int
	name  string
	file  int
}

// buildTree lays out sorted files as a tree: each directory once, above
// the files below it. Files hidden by a narrowed view are left out.
func buildTree(files []*fileView) []treeRow {
	var rows []treeRow
	var prev []string
	for i, f := range files {
		if f.hidden() {
			continue
		}
		parts := strings.Split(f.Path, "/")
		dirs := parts[:len(parts)-1]
		common := 0
		for common < len(dirs) && common < len(prev) && dirs[common] == prev[common] {
			common++
		}
		for d := common; d < len(dirs); d++ {
			rows = append(rows, treeRow{depth: d, name: dirs[d] + "/", file: -1})
		}
		rows = append(rows, treeRow{depth: len(dirs), name: parts[len(parts)-1], file: i})
		prev = dirs
	}
	return rows
}
