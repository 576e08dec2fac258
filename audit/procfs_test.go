package audit

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

func readFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "env", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseProcStatus(t *testing.T) {
	st, err := ParseProcStatus(readFixture(t, "jail/proc/self/status"))
	if err != nil {
		t.Fatal(err)
	}
	if st.UID != [4]int{1000, 1000, 1000, 1000} || st.Seccomp != 2 || st.NoNewPrivs != 1 || st.CapEff != 0 || !st.HasCapBnd {
		t.Fatalf("%+v", st)
	}
	st, err = ParseProcStatus(readFixture(t, "exposed/proc/self/status"))
	if err != nil {
		t.Fatal(err)
	}
	if st.CapEff != 0x1ffffffffff || st.UID[1] != 0 || st.Seccomp != 0 {
		t.Fatalf("%+v", st)
	}
	if _, err := ParseProcStatus([]byte("Uid:\t0\t0\n")); err == nil {
		t.Error("short Uid line accepted")
	}
	if _, err := ParseProcStatus([]byte("CapEff:\tzz\n")); err == nil {
		t.Error("bad CapEff accepted")
	}
	// The real file of this process parses.
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if st, err := ParseProcStatus(b); err != nil || !st.HasUID || !st.HasCapEff {
			t.Errorf("live status: %+v %v", st, err)
		}
	}
}

func TestParseIDMap(t *testing.T) {
	m, err := ParseIDMap([]byte("         0       1000          1\n         1     100000      65536\n"))
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := MapOutside(m, 0); !ok || out != 1000 {
		t.Errorf("0 -> %d %v", out, ok)
	}
	if out, ok := MapOutside(m, 10); !ok || out != 100009 {
		t.Errorf("10 -> %d %v", out, ok)
	}
	if IdentityMap(m) {
		t.Error("identity")
	}
	id, _ := ParseIDMap([]byte("0 0 4294967295\n"))
	if !IdentityMap(id) {
		t.Error("not identity")
	}
	if _, err := ParseIDMap([]byte("0 0\n")); err == nil {
		t.Error("two fields accepted")
	}
}

func TestParseMountinfo(t *testing.T) {
	ms, err := ParseMountinfo(readFixture(t, "exposed/proc/self/mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 7 {
		t.Fatalf("%d mounts", len(ms))
	}
	last := ms[6]
	if last.MountPoint != "/mnt/with space" || last.Root != "/srv/with space" || last.FSType != "ext4" || last.Source != "/dev/vda1" {
		t.Errorf("escaped mount: %+v", last)
	}
	// Optional fields (shared:N) sit before the separator.
	if ms[0].FSType != "ext4" || ms[0].ReadOnly() {
		t.Errorf("root: %+v", ms[0])
	}
	jail, _ := ParseMountinfo(readFixture(t, "jail/proc/self/mountinfo"))
	if m, ok := MountFor(jail, "/proc/sys/kernel/core_pattern"); !ok || m.MountPoint != "/proc/sys" || !m.ReadOnly() {
		t.Errorf("MountFor core_pattern: %+v", m)
	}
	if m, _ := MountFor(jail, "/proc/self/status"); m.MountPoint != "/proc" || m.ReadOnly() {
		t.Errorf("MountFor /proc/self: %+v", m)
	}
	if m, _ := MountFor(jail, "/home/u/.gitconfig"); !m.ReadOnly() {
		t.Errorf("gitconfig bind: %+v", m)
	}
	if m, _ := MountFor(jail, "/procfoo"); m.MountPoint != "/" {
		t.Errorf("prefix without slash matched: %+v", m)
	}
	if _, err := ParseMountinfo([]byte("1 2 3:4 / /\n")); err == nil {
		t.Error("line without separator accepted")
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		if _, err := ParseMountinfo(b); err != nil {
			t.Errorf("live mountinfo: %v", err)
		}
	}
}

func TestParseProcNetTCP(t *testing.T) {
	socks, err := ParseProcNetTCP(readFixture(t, "exposed/proc/net/tcp"))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		local  string
		listen bool
		inode  uint64
	}{{"0.0.0.0:22", true, 12345}, {"127.0.0.1:631", true, 12346}, {"10.0.2.15:22", false, 12347}}
	if len(socks) != len(want) {
		t.Fatalf("%d sockets", len(socks))
	}
	for i, w := range want {
		if socks[i].Local.String() != w.local || socks[i].Listening() != w.listen || socks[i].Inode != w.inode {
			t.Errorf("socket %d: %+v, want %+v", i, socks[i], w)
		}
	}
	if socks[2].Remote.String() != "10.0.2.2:50000" {
		t.Errorf("remote %s", socks[2].Remote)
	}
	six, err := ParseProcNetTCP(readFixture(t, "exposed/proc/net/tcp6"))
	if err != nil || len(six) != 1 || six[0].Local.String() != "[::]:8080" || six[0].UID != 1000 {
		t.Fatalf("tcp6: %+v %v", six, err)
	}
	// ::1 as the kernel prints it.
	lo, err := ParseProcNetTCP([]byte("sl\n 0: 00000000000000000000000001000000:0016 00000000000000000000000000000000:0000 0A 0:0 0:0 0 0 0 99\n"))
	if err != nil || lo[0].Local.Addr() != netip.MustParseAddr("::1") {
		t.Fatalf("::1: %+v %v", lo, err)
	}
	if b, err := os.ReadFile("/proc/net/tcp"); err == nil {
		if _, err := ParseProcNetTCP(b); err != nil {
			t.Errorf("live tcp: %v", err)
		}
	}
}

func TestParseRoute(t *testing.T) {
	rs, err := ParseRoute(readFixture(t, "exposed/proc/net/route"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || !rs[0].Default() || rs[0].Gateway.String() != "192.168.1.1" {
		t.Fatalf("%+v", rs)
	}
	if rs[1].Dest.String() != "169.254.0.0/16" || rs[2].Dest.String() != "192.168.1.0/24" || rs[1].Default() {
		t.Errorf("%+v", rs[1:])
	}
	six, err := ParseIPv6Route(readFixture(t, "exposed/proc/net/ipv6_route"))
	if err != nil || len(six) != 1 || !six[0].Default() || six[0].Gateway.String() != "fe80::1" {
		t.Fatalf("%+v %v", six, err)
	}
	if _, err := ParseRoute([]byte("Iface\tDestination\neth0\t00000000\t0\t1\t0\t0\t0\t00FF00FF\n")); err == nil {
		t.Error("non-contiguous mask accepted")
	}
	if b, err := os.ReadFile("/proc/net/route"); err == nil {
		if _, err := ParseRoute(b); err != nil {
			t.Errorf("live route: %v", err)
		}
	}
}

func TestParseNetDevAndUnix(t *testing.T) {
	if got := ParseNetDev(readFixture(t, "exposed/proc/net/dev")); len(got) != 3 || got[2] != "docker0" {
		t.Errorf("dev: %v", got)
	}
	if got := ParseNetUnix(readFixture(t, "exposed/proc/net/unix")); len(got) != 2 || got[1] != "@/tmp/.X11-unix/X0" {
		t.Errorf("unix: %v", got)
	}
}

func FuzzProcStatus(f *testing.F) {
	f.Add(readFixture(f, "jail/proc/self/status"))
	f.Add(readFixture(f, "exposed/proc/self/status"))
	f.Add([]byte("Uid:\t\t\t\t\nCapEff:\t-1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseProcStatus(b)
		if err != nil {
			return
		}
		if st.HasCapEff && !bytes.Contains(b, []byte("CapEff:")) || st.HasUID && !bytes.Contains(b, []byte("Uid:")) {
			t.Fatalf("field reported without its line: %+v", st)
		}
	})
}

func FuzzMountinfo(f *testing.F) {
	f.Add(readFixture(f, "jail/proc/self/mountinfo"))
	f.Add(readFixture(f, "exposed/proc/self/mountinfo"))
	f.Add([]byte("1 2 3:4 /a\\0 /b\\ - x y z\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := ParseMountinfo(b)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.FSType == "" || m.MountPoint == "" && m.Root == "" && len(m.Options) == 0 {
				t.Fatalf("accepted an empty mount: %+v", m)
			}
			MountFor(ms, m.MountPoint+"/x")
		}
	})
}

func FuzzProcNetTCP(f *testing.F) {
	f.Add(readFixture(f, "exposed/proc/net/tcp"))
	f.Add(readFixture(f, "exposed/proc/net/tcp6"))
	f.Add([]byte("sl\n0: 0100007F:zz 0:0 0A 0 0 0 0 0 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		socks, err := ParseProcNetTCP(b)
		if err != nil {
			return
		}
		for _, s := range socks {
			if !s.Local.IsValid() || !s.Remote.IsValid() {
				t.Fatalf("invalid address accepted: %+v", s)
			}
		}
	})
}

func FuzzRoute(f *testing.F) {
	f.Add(readFixture(f, "exposed/proc/net/route"))
	f.Add(readFixture(f, "exposed/proc/net/ipv6_route"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if rs, err := ParseRoute(b); err == nil {
			for _, r := range rs {
				if !r.Dest.IsValid() || !r.Dest.Addr().Is4() {
					t.Fatalf("invalid route accepted: %+v", r)
				}
			}
		}
		if rs, err := ParseIPv6Route(b); err == nil {
			for _, r := range rs {
				if !r.Dest.IsValid() {
					t.Fatalf("invalid ipv6 route accepted: %+v", r)
				}
			}
		}
	})
}
