'use strict';
// The portfolio (../content/README.md): posts converted once at startup, the layout filled per
// request by plain sequential string replacement. Shared by node-http and node-express; `loadlab
// lab verify` checks each against the reference.

const fs = require('node:fs');
const path = require('node:path');

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escape = (s) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]);

// Content never contains "{{", so replacing each placeholder in turn is exact.
function fill(template, values) {
  let out = template;
  for (const [name, value] of Object.entries(values)) {
    out = out.split(`{{${name}}}`).join(value);
  }
  return out;
}

function renderPost(id, text) {
  const lines = text.split('\n');
  if (!lines[0].startsWith('# ')) throw new Error(`posts/${id}.md: the first line must be "# TITLE"`);
  let body = '';
  let block = [];
  const flush = () => {
    if (block.length === 0) return;
    if (block[0].startsWith('## ')) {
      body += `<h2>${escape(block[0].slice(3))}</h2>`;
    } else if (block[0].startsWith('- ')) {
      body += '<ul>\n' + block.map((l) => `<li>${escape(l.slice(2))}</li>\n`).join('') + '</ul>';
    } else {
      body += `<p>${block.map(escape).join('\n')}</p>`;
    }
    body += '\n';
    block = [];
  };
  for (const line of lines.slice(1)) {
    if (line === '') flush();
    else block.push(line);
  }
  flush();
  return { id, title: lines[0].slice(2), html: body };
}

function loadSite(dir) {
  const read = (rel) => fs.readFileSync(path.join(dir, rel), 'utf8');
  const t = {};
  for (const name of ['layout', 'home', 'blogs', 'blog_item', 'blog', 'version', 'not_found']) {
    t[name] = read(`templates/${name}.html`);
  }
  const version = read('VERSION').split('\n')[0].trim();
  const posts = fs
    .readdirSync(path.join(dir, 'posts'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => renderPost(f.slice(0, -3), read(`posts/${f}`)))
    .sort((a, b) => Buffer.compare(Buffer.from(a.id), Buffer.from(b.id)));
  const byId = new Map(posts.map((p) => [p.id, p]));
  const page = (title, main) => fill(t.layout, { title: escape(title), main });
  return {
    home: () => page('Home', t.home),
    blogs: () =>
      page('Blogs', fill(t.blogs, {
        items: posts.map((p) => fill(t.blog_item, { id: p.id, title: escape(p.title) })).join(''),
      })),
    // undefined for an unknown id
    blog: (id) => {
      const p = byId.get(id);
      return p && page(p.title, fill(t.blog, { title: escape(p.title), body: p.html }));
    },
    version: () => page('Version', fill(t.version, { version: escape(version) })),
    notFound: () => page('Not Found', t.not_found),
  };
}

module.exports = { loadSite };
