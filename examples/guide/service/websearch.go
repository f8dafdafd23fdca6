package service

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrSearch means the web search service could not answer: it is
// unreachable, answered with an error status, or sent what is not a
// result list. The error says which.
var ErrSearch = errors.New("web search failed")

// WebResult is one web page a search found.
type WebResult struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

// SearXNG searches the web through a SearXNG instance's JSON API
// (GET /search?q=...&format=json). The instance must allow the json format
// (search.formats in its settings.yml).
type SearXNG struct {
	// URL is the instance's base address, such as http://localhost:8888.
	URL string
	// Client makes the requests; nil means a client with a 15 s timeout.
	Client *http.Client
	// Timeout bounds one search (default 15 s).
	Timeout time.Duration
}

// maxSearchBody bounds what is read of an answer: a result page is tens of
// kilobytes.
const maxSearchBody = 4 << 20

// Search returns up to k results for query, best first.
func (s SearXNG) Search(ctx context.Context, query string, k int) ([]WebResult, error) {
	base, err := url.Parse(strings.TrimRight(s.URL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("%w: the SearXNG address %q is not an http(s) URL", ErrSearch, s.URL)
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(s.Timeout, 15*time.Second))
	defer cancel()
	u := base.JoinPath("search")
	u.RawQuery = url.Values{"q": {query}, "format": {"json"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSearch, err)
	}
	req.Header.Set("Accept", "application/json")
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSearch, base.Host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: reading the answer: %w", ErrSearch, base.Host, err)
	}
	if resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusForbidden {
			hint = " (does the instance allow the json format? see search.formats in its settings.yml)"
		}
		return nil, fmt.Errorf("%w: %s answered %s%s", ErrSearch, base.Host, resp.Status, hint)
	}
	var page struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, fmt.Errorf("%w: %s did not answer with SearXNG's JSON: %w", ErrSearch, base.Host, err)
	}
	out := make([]WebResult, 0, min(k, len(page.Results)))
	for _, r := range page.Results {
		if len(out) == k {
			break
		}
		if r.URL == "" {
			continue
		}
		out = append(out, WebResult{Title: strings.TrimSpace(r.Title), URL: r.URL, Snippet: strings.TrimSpace(r.Content)})
	}
	return out, nil
}
