package doctor

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Distro is the host's distribution as /etc/os-release names it.
type Distro struct {
	ID      string   // "debian", "ubuntu", "fedora", …
	Like    []string // ID_LIKE
	Version string   // VERSION_ID, e.g. "12", "24.04"
	Name    string   // PRETTY_NAME
}

// String returns "ID VERSION", or "unknown".
func (d Distro) String() string {
	if d.ID == "" {
		return "unknown"
	}
	if d.Version == "" {
		return d.ID
	}
	return d.ID + " " + d.Version
}

// is reports whether the distribution is id or derives from it.
func (d Distro) is(id string) bool {
	if d.ID == id {
		return true
	}
	for _, l := range d.Like {
		if l == id {
			return true
		}
	}
	return false
}

// ubuntuAtLeast reports whether this is Ubuntu (or a derivative carrying
// Ubuntu's version number) at version major.minor or later.
func (d Distro) ubuntuAtLeast(major, minor int) bool {
	if d.ID != "ubuntu" {
		return false
	}
	ma, mi, ok := parseVersion(d.Version)
	return ok && (ma > major || ma == major && mi >= minor)
}

// readDistro parses an os-release file. A missing or unreadable file gives
// the zero Distro.
func readDistro(path string) Distro {
	b, err := os.ReadFile(path)
	if err != nil {
		return Distro{}
	}
	var d Distro
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		} else {
			v = strings.Trim(v, `'"`)
		}
		switch k {
		case "ID":
			d.ID = strings.ToLower(v)
		case "ID_LIKE":
			d.Like = strings.Fields(strings.ToLower(v))
		case "VERSION_ID":
			d.Version = v
		case "PRETTY_NAME":
			d.Name = v
		}
	}
	return d
}

// sysctls holds the switches that turn unprivileged user namespaces off.
// A value is -1 when the file does not exist on this kernel.
type sysctls struct {
	UnprivUsernsClone     int // kernel.unprivileged_userns_clone (Debian kernels)
	AppArmorRestrictUsers int // kernel.apparmor_restrict_unprivileged_userns (Ubuntu 24.04+)
	MaxUserNamespaces     int // user.max_user_namespaces
}

// readSysctls reads the user namespace switches under root, the /proc/sys
// directory (a test passes a directory of its own).
func readSysctls(root string) sysctls {
	return sysctls{
		UnprivUsernsClone:     readIntFile(filepath.Join(root, "kernel", "unprivileged_userns_clone")),
		AppArmorRestrictUsers: readIntFile(filepath.Join(root, "kernel", "apparmor_restrict_unprivileged_userns")),
		MaxUserNamespaces:     readIntFile(filepath.Join(root, "user", "max_user_namespaces")),
	}
}

func readIntFile(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

// parseVersion reads "MAJOR.MINOR…" from the start of s.
func parseVersion(s string) (major, minor int, ok bool) {
	a, rest, _ := strings.Cut(s, ".")
	major, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	if end == 0 {
		return major, 0, true
	}
	minor, _ = strconv.Atoi(rest[:end])
	return major, minor, true
}

// sysctlRemedy is the exact commands that set a sysctl now and at every boot.
func sysctlRemedy(name, value string) string {
	file := "/etc/sysctl.d/90-shadow.conf"
	return fmt.Sprintf("sudo sysctl -w %s=%s\necho '%s = %s' | sudo tee -a %s", name, value, name, value, file)
}
