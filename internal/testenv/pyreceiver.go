package testenv

import (
	"net"
	"os"
	osexec "os/exec"
	"strconv"
	"testing"
	"time"
)

// PythonReceiver runs the Python example receiver, script being the path
// of examples/receiver-python/receiver.py from the test's directory, with
// WEBHOOK_SECRET set to secrets, on a free port. It returns the receiver's
// address once it accepts connections, and its standard error; the
// receiver is killed when the test ends.
func PythonReceiver(t testing.TB, script, secrets string) (string, *Buffer) {
	t.Helper()
	python, err := osexec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to test examples/receiver-python (.ci/run installs it): ", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := osexec.Command(python, script, "--port", port)
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secrets)
	stderr := &Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + port
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr, stderr
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s: %v\n%s", script, addr, err, stderr)
		}
	}
}
