package server

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
)

// ThreadFilesFunc returns the directory that holds the files the runs of
// graph graphID wrote for thread threadID (an orchestrator's results:
// plans, step results, charts, reports), or "" when that graph writes
// none. GET /threads/{thread_id}/files lists the directory's files.
type ThreadFilesFunc = func(graphID, threadID string) string

// maxListedFiles bounds the files GET /threads/{id}/files lists.
const maxListedFiles = 2000

// fileClockSkew is how much older than its thread a file may be and still
// be the thread's: the thread's record and its files may be written by
// two processes whose clocks differ a little.
const fileClockSkew = 5 * time.Second

// fileInfo is one file of a thread, as GET /threads/{id}/files lists it.
type fileInfo struct {
	// Name is the file's path inside the thread's directory, with
	// slashes: "task-1/report.md".
	Name      string    `json:"name"`
	Size      int64     `json:"size"`
	MediaType string    `json:"media_type"`
	Modified  time.Time `json:"modified"`
}

// mediaTypes are the Content-Types of the files an orchestrator writes,
// fixed here rather than read from the system's MIME tables, so that every
// machine serves them alike. Any other file is served as bytes.
var mediaTypes = map[string]string{
	".md":   "text/markdown; charset=utf-8",
	".json": "application/json",
	".svg":  "image/svg+xml",
	".txt":  "text/plain; charset=utf-8",
	".csv":  "text/csv; charset=utf-8",
	".png":  "image/png",
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".gif":  "image/gif",
	".webp": "image/webp",
	".pdf":  "application/pdf",
}

func mediaType(name string) string {
	if t, ok := mediaTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return "application/octet-stream"
}

// threadFilesDir is the directory of a thread's files, "" when its graph
// keeps none (or no run has used a graph yet).
func (s *Server) threadFilesDir(t records.Thread) (string, error) {
	if s.opts.ThreadFiles == nil {
		return "", nil
	}
	g, err := s.threadGraph(t)
	if err != nil || g == nil {
		return "", err
	}
	return s.opts.ThreadFiles(g.id, t.ID), nil
}

// openThreadRoot opens the directory of the thread's files as an os.Root,
// which refuses every path leading out of it (.., symbolic links); nil
// when there is none.
func (s *Server) openThreadRoot(t records.Thread) (*os.Root, error) {
	dir, err := s.threadFilesDir(t)
	if err != nil || dir == "" {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return root, err
}

// listFiles answers GET /threads/{thread_id}/files: the thread's files,
// sorted by name.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) error {
	t, err := s.ownThread(r)
	if err != nil {
		return err
	}
	out := []fileInfo{}
	root, err := s.openThreadRoot(t)
	if err != nil {
		return err
	}
	if root != nil {
		defer root.Close()
		err := fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if name != "." && hiddenName(d.Name()) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil // directories are walked; links and devices are not served
			}
			info, err := d.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // removed while listed
				}
				return err
			}
			if !fileOfThread(info, t) {
				return nil
			}
			out = append(out, fileInfo{Name: name, Size: info.Size(), MediaType: mediaType(name), Modified: info.ModTime().UTC()})
			if len(out) >= maxListedFiles {
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

// getFile answers GET /threads/{thread_id}/files/{name...}: one file, with
// its Content-Type; ?download=1 makes it an attachment.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request) error {
	t, err := s.ownThread(r)
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := checkFileName(name); err != nil {
		return err
	}
	notFound := api.NotFound("File %s of thread %s not found", name, t.ID)
	root, err := s.openThreadRoot(t)
	if err != nil {
		return err
	}
	if root == nil {
		return notFound
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(name))
	if err != nil {
		// Missing, or a path the root refuses (a link out of it).
		return notFound
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || !fileOfThread(info, t) {
		return notFound
	}
	h := w.Header()
	h.Set("Content-Type", mediaType(name))
	h.Set("X-Content-Type-Options", "nosniff")
	// A file opened by itself (an SVG, say) runs no script and loads
	// nothing: the files are the graph's output, not the server's pages.
	h.Set("Content-Security-Policy", "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox")
	h.Set("Cache-Control", "private, no-cache")
	disposition := "inline"
	if queryBool(r, "download") {
		disposition = "attachment"
	}
	h.Set("Content-Disposition", disposition+"; filename*=UTF-8''"+escapeFilename(path.Base(name)))
	http.ServeContent(w, r, "", info.ModTime(), f)
	return nil
}

// checkFileName refuses a name that is not a plain relative path inside
// the thread's directory: empty, absolute, with . or .. elements,
// backslashes, or a hidden element (the orchestrator's temporary files).
func checkFileName(name string) error {
	bad := func(msg string) error {
		return api.Invalid(api.Issue{Code: "invalid_string", Path: []any{"name"}, Message: msg})
	}
	if !fs.ValidPath(name) || name == "." || strings.Contains(name, `\`) {
		return bad("a file name is a relative path of the thread's files, with no . or .. elements and no backslash")
	}
	for _, el := range strings.Split(name, "/") {
		if hiddenName(el) {
			return bad("hidden files are not served")
		}
	}
	return nil
}

func hiddenName(name string) bool { return strings.HasPrefix(name, ".") }

// fileOfThread reports whether a file may be the thread's: not written
// before the thread was created. A thread id may be chosen by its
// creator, so a new thread can take the id of a deleted one, another
// user's; files the old one left behind are not the new one's.
func fileOfThread(info fs.FileInfo, t records.Thread) bool {
	return t.CreatedAt.IsZero() || !info.ModTime().Before(t.CreatedAt.Add(-fileClockSkew))
}

// escapeFilename writes a file name for Content-Disposition's filename*
// (RFC 5987): every byte but letters, digits and a few marks as %XX.
func escapeFilename(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return b.String()
}

// removeThreadFiles deletes a deleted thread's files, in the directory of
// every graph served (the thread's graph is no longer known); a failure
// is logged, not returned: the thread is gone, and a new thread of the
// same id does not see files older than itself.
func (s *Server) removeThreadFiles(threadID string) {
	if s.opts.ThreadFiles == nil {
		return
	}
	seen := map[string]bool{}
	for id := range s.graphs {
		dir := s.opts.ThreadFiles(id, threadID)
		if dir == "" || seen[dir] {
			continue
		}
		seen[dir] = true
		if err := os.RemoveAll(dir); err != nil {
			s.log.Warn("server: deleting a thread's files", "thread_id", threadID, "dir", dir, "err", err)
		}
	}
}
