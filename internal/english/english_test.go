package english

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n      int
		noun   string
		plural []string
		want   string
	}{
		{0, "hunk", nil, "0 hunks"},
		{1, "hunk", nil, "1 hunk"},
		{2, "hunk", nil, "2 hunks"},
		{1, "path", nil, "1 path"},
		{1, "apply", nil, "1 apply"},
		{3, "apply", nil, "3 applies"},
		{2, "scope registry", nil, "2 scope registries"},
		{2, "dependency", nil, "2 dependencies"},
		{2, "day", nil, "2 days"},
		{2, "address", nil, "2 addresses"},
		{2, "patch", nil, "2 patches"},
		{2, "flash", nil, "2 flashes"},
		{2, "box", nil, "2 boxes"},
		{2, "type change", nil, "2 type changes"},
		{1, "child", []string{"children"}, "1 child"},
		{2, "child", []string{"children"}, "2 children"},
		{-1, "degree", nil, "-1 degree"},
	} {
		if got := Count(tc.n, tc.noun, tc.plural...); got != tc.want {
			t.Errorf("Count(%d, %q, %q) = %q, want %q", tc.n, tc.noun, tc.plural, got, tc.want)
		}
	}
	if got := Noun(1, "file"); got != "file" {
		t.Errorf("Noun(1, file) = %q", got)
	}
	if got := Noun(5, "file"); got != "files" {
		t.Errorf("Noun(5, file) = %q", got)
	}
}
