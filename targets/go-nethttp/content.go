// The portfolio (../content/README.md): posts converted once at startup, the layout filled
// per request by plain sequential string replacement.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type post struct {
	id, title, html string
}

type site struct {
	layout, home, blogs, blogItem, blog, version, notFound string
	versionLine                                            string
	posts                                                  []post
	byID                                                   map[string]*post
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

func escape(s string) string { return escaper.Replace(s) }

// fill replaces each {{name}} in order; content never contains "{{", so this is exact.
func fill(template string, pairs ...string) string {
	for i := 0; i+1 < len(pairs); i += 2 {
		template = strings.ReplaceAll(template, "{{"+pairs[i]+"}}", pairs[i+1])
	}
	return template
}

func loadSite(dir string) (*site, error) {
	read := func(rel string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		return string(b), err
	}
	s := &site{byID: map[string]*post{}}
	for _, f := range []struct {
		dst *string
		rel string
	}{
		{&s.layout, "templates/layout.html"}, {&s.home, "templates/home.html"},
		{&s.blogs, "templates/blogs.html"}, {&s.blogItem, "templates/blog_item.html"},
		{&s.blog, "templates/blog.html"}, {&s.version, "templates/version.html"},
		{&s.notFound, "templates/not_found.html"}, {&s.versionLine, "VERSION"},
	} {
		text, err := read(f.rel)
		if err != nil {
			return nil, err
		}
		*f.dst = text
	}
	s.versionLine = strings.TrimSpace(strings.SplitN(s.versionLine, "\n", 2)[0])
	files, err := filepath.Glob(filepath.Join(dir, "posts", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		p, err := parsePost(strings.TrimSuffix(filepath.Base(file), ".md"), string(text))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		s.posts = append(s.posts, p)
	}
	sort.Slice(s.posts, func(i, j int) bool { return s.posts[i].id < s.posts[j].id })
	for i := range s.posts {
		s.byID[s.posts[i].id] = &s.posts[i]
	}
	return s, nil
}

func parsePost(id, text string) (post, error) {
	lines := strings.Split(text, "\n")
	if !strings.HasPrefix(lines[0], "# ") {
		return post{}, fmt.Errorf("the first line must be `# TITLE`")
	}
	var body strings.Builder
	var block []string
	flush := func() {
		if len(block) == 0 {
			return
		}
		switch {
		case strings.HasPrefix(block[0], "## "):
			body.WriteString("<h2>" + escape(block[0][3:]) + "</h2>")
		case strings.HasPrefix(block[0], "- "):
			body.WriteString("<ul>\n")
			for _, line := range block {
				body.WriteString("<li>" + escape(strings.TrimPrefix(line, "- ")) + "</li>\n")
			}
			body.WriteString("</ul>")
		default:
			escaped := make([]string, len(block))
			for i, line := range block {
				escaped[i] = escape(line)
			}
			body.WriteString("<p>" + strings.Join(escaped, "\n") + "</p>")
		}
		body.WriteString("\n")
		block = block[:0]
	}
	for _, line := range lines[1:] {
		if line == "" {
			flush()
		} else {
			block = append(block, line)
		}
	}
	flush()
	return post{id: id, title: lines[0][2:], html: body.String()}, nil
}

func (s *site) page(title, main string) string {
	return fill(s.layout, "title", escape(title), "main", main)
}

func (s *site) homePage() string { return s.page("Home", s.home) }

func (s *site) blogsPage() string {
	var items strings.Builder
	for _, p := range s.posts {
		items.WriteString(fill(s.blogItem, "id", p.id, "title", escape(p.title)))
	}
	return s.page("Blogs", fill(s.blogs, "items", items.String()))
}

func (s *site) blogPage(id string) (string, bool) {
	p, ok := s.byID[id]
	if !ok {
		return "", false
	}
	return s.page(p.title, fill(s.blog, "title", escape(p.title), "body", p.html)), true
}

func (s *site) versionPage() string {
	return s.page("Version", fill(s.version, "version", escape(s.versionLine)))
}

func (s *site) notFoundPage() string { return s.page("Not Found", s.notFound) }
