package loopback

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// BuildFurrow builds the furrow binary into dir and returns its path. It
// must run inside this module, as tests do; the go command's output is in
// the error.
func BuildFurrow(dir string) (string, error) {
	bin := filepath.Join(dir, "furrow")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/furrowhq/furrow/cmd/furrow").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build furrow: %w\n%s", err, out)
	}
	return bin, nil
}
