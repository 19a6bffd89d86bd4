/* watch.c — watch.start / watch.stop: inotify, recursive, events streamed as watch.event.
 *
 * Each watch has its own inotify instance, so watches never share watch descriptors. Events are
 * read only while the outgoing queue has room; otherwise they wait in the kernel's bounded queue,
 * whose overflow (IN_Q_OVERFLOW) becomes one "overflow" event.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DIRS_PER_WATCH 8192
#define MAX_WALK_DEPTH 64
#define WATCH_MASK                                                                                 \
        (IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |             \
         IN_DELETE_SELF | IN_DONT_FOLLOW | IN_EXCL_UNLINK)

typedef struct {
        int wd;
        char *path;
} WatchDir;

struct Watch {
        Watch *prev, *next;
        uint64_t id;
        Source src;
        bool recursive;
        WatchDir *dirs; /* sorted by wd (the kernel hands them out increasing) */
        size_t n_dirs;
        bool dirs_full;
        char *root;
        Agent *agent; /* for the memory budget of all watches */
};

static void
watch_free (Agent *a, Watch *w)
{
        if (w->prev)
                w->prev->next = w->next;
        else
                a->watches = w->next;
        if (w->next)
                w->next->prev = w->prev;
        a->n_watches--;
        source_close (a, &w->src);
        for (size_t i = 0; i < w->n_dirs; i++) {
                a->watch_bytes -= strlen (w->dirs[i].path) + 1;
                free (w->dirs[i].path);
        }
        free (w->dirs);
        free (w->root);
        free (w);
}

void
watches_free_all (Agent *a)
{
        while (a->watches)
                watch_free (a, a->watches);
}

void
watches_kick (Agent *a)
{
        for (Watch *w = a->watches; w; w = w->next)
                source_set_events (a, &w->src, EPOLLIN);
}

static void
emit (Agent *a, Watch *w, const char *path, const char *kind)
{
        cJSON *p = cJSON_CreateObject ();

        if (p) {
                json_add_number (p, "watch", (double) w->id);
                json_add_string_bytes (p, "path", path, strlen (path));
                cJSON_AddStringToObject (p, "kind", kind);
        }
        agent_emit (a, "watch.event", p);
}

static ssize_t
dir_index (const Watch *w, int wd)
{
        size_t lo = 0, hi = w->n_dirs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;

                if (w->dirs[mid].wd == wd)
                        return (ssize_t) mid;
                if (w->dirs[mid].wd < wd)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -1;
}

static void
dir_remove (Watch *w, size_t i)
{
        w->agent->watch_bytes -= strlen (w->dirs[i].path) + 1;
        free (w->dirs[i].path);
        memmove (w->dirs + i, w->dirs + i + 1, (w->n_dirs - i - 1) * sizeof *w->dirs);
        w->n_dirs--;
}

static int
dir_add (Watch *w, const char *path)
{
        size_t i;
        WatchDir *d;
        char *copy;
        int wd;

        if (w->n_dirs >= MAX_DIRS_PER_WATCH ||
            w->agent->watch_bytes + strlen (path) + 1 > AGENT_WATCH_BYTES) {
                w->dirs_full = true;
                return -ENOSPC;
        }
        wd = inotify_add_watch (w->src.fd, path, WATCH_MASK);
        if (wd < 0)
                return -errno;
        if (dir_index (w, wd) >= 0)
                return 0; /* the same directory again (a move within the tree) */
        copy = strdup (path);
        d = realloc (w->dirs, (w->n_dirs + 1) * sizeof *w->dirs);
        if (!copy || !d) {
                free (copy);
                if (d)
                        w->dirs = d;
                inotify_rm_watch (w->src.fd, wd);
                return -ENOMEM;
        }
        w->dirs = d;
        /* Usually appended; a reused wd keeps the array sorted anyway. */
        for (i = w->n_dirs; i > 0 && w->dirs[i - 1].wd > wd; i--)
                w->dirs[i] = w->dirs[i - 1];
        w->dirs[i].wd = wd;
        w->dirs[i].path = copy;
        w->n_dirs++;
        w->agent->watch_bytes += strlen (copy) + 1;
        return 0;
}

/* Adds watches below path; with report, also tells about entries that appeared before the
 * watch existed (they were created together with a new directory). */
static void
walk (Agent *a, Watch *w, const char *path, int depth, bool report)
{
        struct dirent *de;
        DIR *d;
        int fd;

        if (depth > MAX_WALK_DEPTH)
                return;
        fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return;
        d = fdopendir (fd);
        if (!d) {
                close (fd);
                return;
        }
        while ((de = readdir (d))) {
                struct stat st;
                char *child;

                if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
                        continue;
                if (asprintf (&child, "%s/%s", strcmp (path, "/") == 0 ? "" : path, de->d_name) < 0)
                        break;
                if (report)
                        emit (a, w, child, "create");
                if (fstatat (fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISDIR (st.st_mode) && dir_add (w, child) == 0)
                        walk (a, w, child, depth + 1, report);
                free (child);
        }
        closedir (d);
}

/* A directory moved away: its watches would report under a stale path. */
static void
forget_subtree (Watch *w, const char *path)
{
        size_t len = strlen (path);

        for (size_t i = 0; i < w->n_dirs;) {
                const char *p = w->dirs[i].path;

                if (strncmp (p, path, len) == 0 && (p[len] == '\0' || p[len] == '/')) {
                        inotify_rm_watch (w->src.fd, w->dirs[i].wd);
                        dir_remove (w, i);
                } else {
                        i++;
                }
        }
}

static const char *
kind_of (uint32_t mask)
{
        if (mask & IN_CREATE)
                return "create";
        if (mask & IN_DELETE)
                return "delete";
        if (mask & IN_MOVED_FROM)
                return "move-from";
        if (mask & IN_MOVED_TO)
                return "move-to";
        if (mask & IN_MODIFY)
                return "modify";
        if (mask & IN_ATTRIB)
                return "attrib";
        return NULL;
}

static void
handle_event (Agent *a, Watch *w, const struct inotify_event *ev)
{
        ssize_t i = dir_index (w, ev->wd);
        const char *kind = kind_of (ev->mask);
        char *path;

        if (ev->mask & IN_Q_OVERFLOW) {
                emit (a, w, w->root, "overflow");
                return;
        }
        if (i < 0)
                return;
        if (ev->mask & IN_IGNORED) {
                dir_remove (w, (size_t) i);
                return;
        }
        if ((ev->mask & IN_DELETE_SELF) && strcmp (w->dirs[i].path, w->root) == 0) {
                emit (a, w, w->root, "delete");
                return;
        }
        if (!kind)
                return;
        if (ev->len > 0 && ev->name[0]) {
                const char *dir = strcmp (w->dirs[i].path, "/") == 0 ? "" : w->dirs[i].path;

                if (asprintf (&path, "%s/%s", dir, ev->name) < 0)
                        return;
        } else {
                path = strdup (w->dirs[i].path);
                if (!path)
                        return;
        }
        emit (a, w, path, kind);
        if (w->recursive && (ev->mask & IN_ISDIR)) {
                if (ev->mask & IN_MOVED_FROM)
                        forget_subtree (w, path);
                else if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && dir_add (w, path) == 0)
                        walk (a, w, path, 1, true);
        }
        free (path);
}

static void
on_inotify (Agent *a, Source *s, uint32_t events)
{
        Watch *w = s->data;
        char buf[16384] __attribute__ ((aligned (__alignof__(struct inotify_event))));
        ssize_t n;

        if (a->out_full) {
                /* Leave the events in the kernel's queue until the host catches up. */
                source_set_events (a, s, 0);
                return;
        }
        n = read (s->fd, buf, sizeof buf);
        if (n <= 0)
                return;
        for (char *p = buf; p < buf + n;) {
                const struct inotify_event *ev = (const struct inotify_event *) p;

                handle_event (a, w, ev);
                p += sizeof *ev + ev->len;
        }
        if (w->dirs_full) {
                w->dirs_full = false;
                emit (a, w, w->root, "overflow");
        }
}

void
method_watch_start (Agent *a, uint64_t id, const cJSON *params)
{
        const char *path = path_param (a, id, params, "path");
        bool recursive = true;
        struct stat st;
        cJSON *res;
        Watch *w;
        int fd, r;

        if (!path || bool_param (a, id, params, "recursive", &recursive) < 0)
                return;
        if (a->n_watches >= AGENT_MAX_WATCHES) {
                agent_respond_error (a, id, "busy", "too many watches", 0);
                return;
        }
        w = calloc (1, sizeof *w);
        if (!w || !(w->root = strdup (path))) {
                free (w);
                agent_respond_error (a, id, "internal", "out of memory", ENOMEM);
                return;
        }
        for (size_t len = strlen (w->root); len > 1 && w->root[len - 1] == '/'; len--)
                w->root[len - 1] = '\0';
        path = w->root;
        w->agent = a;
        w->id = ++a->next_watch_id;
        w->recursive = recursive;
        source_init (&w->src, on_inotify, w);
        w->next = a->watches;
        if (a->watches)
                a->watches->prev = w;
        a->watches = w;
        a->n_watches++;

        fd = inotify_init1 (IN_CLOEXEC | IN_NONBLOCK);
        r = fd < 0 ? -errno : source_add (a, &w->src, fd, EPOLLIN);
        if (r < 0 && fd >= 0)
                close (fd);
        if (r == 0)
                r = dir_add (w, path);
        if (r < 0) {
                watch_free (a, w);
                agent_respond_errno (a, id, r == -EMFILE ? EBUSY : -r, NULL);
                return;
        }
        if (recursive && lstat (path, &st) == 0 && S_ISDIR (st.st_mode))
                walk (a, w, path, 1, false);
        res = cJSON_CreateObject ();
        if (res)
                json_add_number (res, "watch", (double) w->id);
        agent_respond (a, id, res);
}

void
method_watch_stop (Agent *a, uint64_t id, const cJSON *params)
{
        int64_t wid;

        if (proto_json_get_int (params, "watch", 1, (int64_t) PROTO_MAX_ID, &wid) < 0) {
                agent_respond_error (a, id, "invalid-request", "missing or invalid watch", 0);
                return;
        }
        for (Watch *w = a->watches; w; w = w->next) {
                if (w->id == (uint64_t) wid) {
                        watch_free (a, w);
                        agent_respond (a, id, NULL);
                        return;
                }
        }
        agent_respond_error (a, id, "not-found", "no such watch", 0);
}
