package sandbox

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOverlayCheckpointAnswers: every requested checkpoint is answered, in order, after the
// message of the checkpoint it wrote or when there was nothing to write; so a caller that holds
// the command's input until the answer gets a checkpoint of what came before that input.
func TestOverlayCheckpointAnswers(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.Checkpoints = filepath.Join(j.base, "state", "checkpoints")
	p.NextCheckpoint = 1
	p.QuietCheckpoint = -1
	req := make(chan string, 1)
	p.CheckpointRequests = req
	var mu sync.Mutex
	var events []string
	answered := make(chan string, 8)
	p.Checkpointed = func(c Checkpoint) {
		mu.Lock()
		events = append(events, "written "+c.ID+" "+c.Trigger+" "+strings.Join(c.Paths, ","))
		mu.Unlock()
	}
	p.CheckpointAnswered = func(trigger string) {
		mu.Lock()
		events = append(events, "answered "+trigger)
		mu.Unlock()
		answered <- trigger
	}
	// The command writes a.txt, says so, and writes b.txt as soon as it reads a line (its
	// prompt), which is sent only once the checkpoints asked for before it are answered. (It
	// waits a little after a.txt: a file changed within a clock tick of a checkpoint is copied
	// again at the next, see layers.racyWindow.)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.Stdin, p.Stdout, p.Stderr = inR, outW, outW
	go func() {
		defer inW.Close()
		sc := bufio.NewScanner(outR)
		for sc.Scan() && sc.Text() != "ready" {
		}
		for range 2 { // a.txt; then nothing new, answered all the same
			req <- CheckpointPrompt
			select {
			case <-answered:
			case <-time.After(20 * time.Second):
				t.Error("no answer")
				return
			}
		}
		_, _ = inW.Write([]byte("go\n"))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := runSetup(ctx, p, []string{"/bin/sh", "-c", `echo a > a.txt; sleep 0.1; echo ready; read x; echo b > b.txt`})
	inR.Close()
	outW.Close()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: exit %d, %v", res.ExitCode, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"written c1 prompt a.txt", "answered prompt", "answered prompt", "written c2 run end b.txt"}
	if strings.Join(events, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", events, want)
	}
}
