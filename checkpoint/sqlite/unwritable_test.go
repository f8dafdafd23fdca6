package sqlite_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint/sqlite"
)

// lockDir makes dir unwritable for this process: by its mode for an
// ordinary user, by the immutable attribute for root (whom modes do not
// stop). It undoes that when the test ends.
func lockDir(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Fatalf("running as root, the test makes %s immutable with chattr +i, which failed: %v: %s", dir, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
}

// A database that cannot be written is refused when it is opened, before
// any run could act, and the error says whether the file or its directory
// is the cause.
func TestOpenNamesWhatIsUnwritable(t *testing.T) {
	ctx := context.Background()

	t.Run("directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "weft.db")
		lockDir(t, dir)
		_, err := sqlite.Open(ctx, path)
		if err == nil {
			t.Fatal("Open succeeded in a directory that cannot be written")
		}
		if !strings.Contains(err.Error(), "the directory "+dir+" is not writable") {
			t.Errorf("error does not name the directory %s as the cause: %v", dir, err)
		}
	})

	t.Run("directory of an existing file", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "weft.db")
		d, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		// A clean close removes -wal and -shm; SQLite must create them again.
		for _, f := range []string{path + "-wal", path + "-shm"} {
			os.Remove(f)
		}
		lockDir(t, dir)
		_, err = sqlite.Open(ctx, path)
		if err == nil {
			t.Fatal("Open succeeded although SQLite cannot create its -wal and -shm files")
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "is not writable") {
			t.Errorf("error does not name the file and the unwritable directory: %v", err)
		}
	})
}
