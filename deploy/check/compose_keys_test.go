package check

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

// TestComposeSecretKeys: every Furrow process reads the key ring the
// secret-keys service makes, and that service's script, run here, writes a
// one-key ring of exactly 32 bytes once and keeps it on later runs.
func TestComposeSecretKeys(t *testing.T) {
	p := loadCompose(t)
	keys, ok := p.Services["secret-keys"]
	if !ok {
		t.Fatal("no secret-keys service")
	}
	var dir string
	for _, v := range keys.Volumes {
		if v.Source == "secret-keys" {
			dir = v.Target
		}
	}
	if dir == "" {
		t.Fatal("secret-keys does not write into the secret-keys volume")
	}
	for name, s := range p.Services {
		if !strings.Contains(s.Image, "furrow") {
			continue
		}
		file := s.Environment["FURROW_SECRET_KEYS_FILE"]
		if file == nil {
			t.Errorf("service %s: FURROW_SECRET_KEYS_FILE is not set: webhook secrets would be stored unsealed", name)
			continue
		}
		var mounted bool
		for _, v := range s.Volumes {
			mounted = mounted || (v.Source == "secret-keys" && v.ReadOnly && strings.HasPrefix(*file, v.Target+"/"))
		}
		if !mounted {
			t.Errorf("service %s: %s is not in the secret-keys volume mounted read-only", name, *file)
		}
		if d := s.DependsOn["secret-keys"]; d.Condition != types.ServiceConditionCompletedSuccessfully {
			t.Errorf("service %s starts before the key ring exists (%+v)", name, d)
		}
	}
	requireTool(t, "sh", "dash")
	tmp := t.TempDir()
	// The script as the container runs it, in a temporary directory and
	// without the change of owner, which needs root.
	script := "chown() { :; }\n" + strings.ReplaceAll(strings.Join(keys.Command, "\n"), dir, tmp)
	run := func() string {
		if out, err := exec.Command("sh", "-ec", script).CombinedOutput(); err != nil {
			t.Fatalf("the secret-keys script fails: %v\n%s", err, out)
		}
		b, err := os.ReadFile(filepath.Join(tmp, "ring"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ring := run()
	id, key, ok := strings.Cut(strings.TrimSpace(ring), ":")
	raw, err := base64.StdEncoding.DecodeString(key)
	if !ok || id == "" || err != nil || len(raw) != 32 {
		t.Fatalf("the ring made is not one id:base64key of 32 bytes (id %q, %d bytes, %v)", id, len(raw), err)
	}
	if fi, err := os.Stat(filepath.Join(tmp, "ring")); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the ring file is readable by others: %v %v", fi.Mode(), err)
	}
	if again := run(); again != ring {
		t.Error("a second run replaced the key ring: every sealed secret would be lost")
	}
}
