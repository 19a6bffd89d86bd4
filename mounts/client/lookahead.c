/* lookahead.c — LOOKUPs answered from a directory listing read ahead of the kernel.
 *
 * A program that stats every file of a tree the guest has not cached (git status once the
 * guest's caches were dropped, find, an editor indexing a project) makes the kernel send one
 * LOOKUP per name, each a round trip through the port; under TCG that round trip costs more
 * than everything else the kernel and this client do for the lookup. So once the server has
 * found FS_LA_TRIGGER existing names in one directory within FS_LA_WINDOW_MS, the client
 * reads that directory itself (OPENDIR, READDIRPLUS, RELEASEDIR) and answers the following
 * lookups of its names from the listing, without a round trip.
 *
 * Nothing is decided here. Each listed entry is one the server resolved and counted as a
 * lookup (READDIRPLUS does), exactly what the kernel would have cached had it read the
 * directory itself:
 * - an entry answers one LOOKUP at most (its one reference passes to the kernel); every entry
 *   that was not handed out is given back with FORGET when its listing goes;
 * - a listing lasts the attribute timeout, counted from when it was asked for, and the kernel
 *   caches what it gets from one only for what is left of that time;
 * - any request that may change a file or folder (everything but lookups, reads and listings)
 *   and every notification from the server drop each listing that could still answer a
 *   lookup or is still being read, and that directory is not listed again for FS_LA_QUIET_MS,
 *   so a workload that writes while it looks names up pays for one listing a second at most;
 * - a name that is not in a listing is looked up at the server as before: no negative answers;
 * - memory is bounded: FS_LA_DIRS directories, FS_LA_MAX_ENTRIES entries in all, read in
 *   chunks that double from FS_LA_FIRST_CHUNK while lookups keep missing the listing.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-fs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FS_LA_DIRS 16
#define FS_LA_TRIGGER 2
#define FS_LA_WINDOW_MS 1000
#define FS_LA_QUIET_MS 1000
#define FS_LA_FIRST_CHUNK (32u * 1024u)
#define FS_LA_MAX_ENTRIES 16384u

typedef struct {
        FsEntry entry;
        uint32_t name_at; /* into the listing's names */
        uint8_t name_len;
        bool given; /* handed to the kernel: the reference is the kernel's now */
} LaEntry;

struct FsLaDir {
        uint64_t dir; /* the directory's node; 0: a free record */
        uint32_t serial; /* changes when the listing is dropped, so late replies are known */
        uint32_t misses; /* lookups the server answered since first_miss_ms */
        int64_t first_miss_ms;
        int64_t listed_ms; /* when the listing was asked for; -1: not listed */
        int64_t used_ms;
        int64_t quiet_until_ms; /* something changed: not listed again before */
        uint32_t held; /* entries not handed out */
        uint64_t handle; /* the directory as we opened it; 0: closed */
        uint64_t offset; /* where the next READDIRPLUS starts */
        uint32_t chunk; /* its size */
        bool in_flight; /* our OPENDIR or READDIRPLUS is outstanding */
        bool more; /* the directory may hold names past what is listed */
        LaEntry *entries;
        uint32_t n, cap;
        char *names;
        size_t names_len, names_cap;
        uint32_t *index; /* open addressing: entry number + 1; 0 is empty */
        uint32_t index_cap; /* a power of two, at least twice n */
};

static int64_t
ttl_ms (const Fs *fs)
{
        return (int64_t) (fs->timeout * 1000.0);
}

static uint32_t
name_hash (const char *name, size_t len)
{
        uint32_t h = 2166136261u; /* FNV-1a */

        for (size_t i = 0; i < len; i++)
                h = (h ^ (uint8_t) name[i]) * 16777619u;
        return h;
}

int
fs_la_init (Fs *fs)
{
        fs->la_dirs = calloc (FS_LA_DIRS, sizeof *fs->la_dirs);
        if (!fs->la_dirs)
                return -ENOMEM;
        for (unsigned i = 0; i < FS_LA_DIRS; i++)
                fs->la_dirs[i].listed_ms = -1;
        return 0;
}

/* Frees the listing, giving back what it holds when give_back. The record keeps its
 * directory and quiet time. */
static void
release_listing (Fs *fs, FsLaDir *d, bool give_back)
{
        FsForgets forgets;

        fs_forgets_init (&forgets);
        for (uint32_t i = 0; i < d->n; i++) {
                if (d->entries[i].given)
                        continue;
                if (give_back)
                        fs_forgets_add (fs, &forgets, d->entries[i].entry.node, 1);
        }
        if (give_back) {
                fs_forgets_flush (fs, &forgets);
                if (d->handle)
                        fs_send_release (fs, FS_OP_RELEASEDIR, d->handle);
        }
        free (d->entries);
        free (d->names);
        free (d->index);
        d->entries = NULL;
        d->names = NULL;
        d->index = NULL;
        d->n = d->cap = d->held = d->index_cap = 0;
        d->names_len = d->names_cap = 0;
        d->handle = 0;
        d->in_flight = d->more = false;
        d->misses = 0;
        d->listed_ms = -1;
        d->serial++;
}

/* Frees the listing and the record. */
static void
drop_dir (Fs *fs, FsLaDir *d, bool give_back)
{
        uint32_t serial;

        if (d->dir == 0)
                return;
        release_listing (fs, d, give_back);
        serial = d->serial;
        memset (d, 0, sizeof *d);
        d->serial = serial;
        d->listed_ms = -1;
}

void
fs_la_reset (Fs *fs)
{
        if (!fs->la_dirs)
                return;
        /* Nothing goes to the server: its node table and handles went with the session. */
        for (unsigned i = 0; i < FS_LA_DIRS; i++)
                drop_dir (fs, &fs->la_dirs[i], false);
}

void
fs_la_clear (Fs *fs)
{
        fs_la_reset (fs);
        free (fs->la_dirs);
        fs->la_dirs = NULL;
}

void
fs_la_invalidate (Fs *fs)
{
        int64_t now = -1;

        if (!fs->la_dirs)
                return;
        for (unsigned i = 0; i < FS_LA_DIRS; i++) {
                FsLaDir *d = &fs->la_dirs[i];

                /* A listing whose every entry was handed out answers nothing any more. A
                 * listing on its way was read before this change reached the server. */
                if (d->dir == 0 || (!d->in_flight && d->held == 0))
                        continue;
                if (now < 0)
                        now = fs_now_ms ();
                release_listing (fs, d, true);
                d->quiet_until_ms = now + FS_LA_QUIET_MS;
        }
}

int64_t
fs_la_expire (Fs *fs, int64_t now)
{
        int64_t next = -1;

        if (!fs->la_dirs)
                return -1;
        for (unsigned i = 0; i < FS_LA_DIRS; i++) {
                FsLaDir *d = &fs->la_dirs[i];
                int64_t at = d->listed_ms + ttl_ms (fs);

                if (d->dir == 0 || d->listed_ms < 0)
                        continue;
                if (at <= now)
                        release_listing (fs, d, true);
                else if (next < 0 || at < next)
                        next = at;
        }
        return next;
}

/* Listings -------------------------------------------------------------------------------------- */

/* Entries listed and not handed to the kernel, in all listings: each holds a lookup. */
static uint32_t
held (const Fs *fs)
{
        uint32_t n = 0;

        for (unsigned i = 0; i < FS_LA_DIRS; i++)
                n += fs->la_dirs[i].held;
        return n;
}

static FsLaDir *
find_dir (Fs *fs, uint64_t dir)
{
        for (unsigned i = 0; i < FS_LA_DIRS; i++)
                if (fs->la_dirs[i].dir == dir)
                        return &fs->la_dirs[i];
        return NULL;
}

/* A free record, or the least recently used one, dropped. */
static FsLaDir *
new_dir (Fs *fs, uint64_t dir, int64_t now)
{
        FsLaDir *victim = NULL;

        for (unsigned i = 0; i < FS_LA_DIRS; i++) {
                FsLaDir *d = &fs->la_dirs[i];

                if (d->dir == 0) {
                        victim = d;
                        break;
                }
                if (!victim || d->used_ms < victim->used_ms)
                        victim = d;
        }
        drop_dir (fs, victim, true);
        victim->dir = dir;
        victim->used_ms = now;
        victim->first_miss_ms = now;
        return victim;
}

static LaEntry *
find_entry (FsLaDir *d, const char *name, size_t len)
{
        uint32_t mask = d->index_cap - 1;

        if (d->index_cap == 0)
                return NULL;
        for (uint32_t at = name_hash (name, len) & mask;; at = (at + 1) & mask) {
                LaEntry *e;

                if (d->index[at] == 0)
                        return NULL;
                e = &d->entries[d->index[at] - 1];
                if (e->name_len == len && memcmp (d->names + e->name_at, name, len) == 0)
                        return e;
        }
}

static bool
rebuild_index (FsLaDir *d)
{
        uint32_t cap = 16, mask;
        uint32_t *index;

        while (cap < 2 * d->n)
                cap *= 2;
        index = calloc (cap, sizeof *index);
        if (!index)
                return false;
        mask = cap - 1;
        for (uint32_t i = 0; i < d->n; i++) {
                const LaEntry *e = &d->entries[i];
                uint32_t at = name_hash (d->names + e->name_at, e->name_len) & mask;

                while (index[at] != 0)
                        at = (at + 1) & mask;
                index[at] = i + 1;
        }
        free (d->index);
        d->index = index;
        d->index_cap = cap;
        return true;
}

static bool
grow (void **buf, size_t *cap, size_t need, size_t size)
{
        size_t n = *cap ? *cap : 64;
        void *p;

        if (need <= *cap)
                return true;
        while (n < need)
                n *= 2;
        p = realloc (*buf, n * size);
        if (!p)
                return false;
        *buf = p;
        *cap = n;
        return true;
}

/* Keeps one READDIRPLUS entry (and its lookup); false when the limits are reached. */
static bool
add_entry (Fs *fs, FsLaDir *d, const FsDirent *de)
{
        size_t cap = d->cap;

        if (held (fs) >= FS_LA_MAX_ENTRIES ||
            !grow ((void **) &d->entries, &cap, (size_t) d->n + 1, sizeof *d->entries) ||
            !grow ((void **) &d->names, &d->names_cap, d->names_len + de->name.len, 1))
                return false;
        d->cap = (uint32_t) cap;
        memcpy (d->names + d->names_len, de->name.ptr, de->name.len);
        d->entries[d->n] = (LaEntry){
                .entry = de->entry,
                .name_at = (uint32_t) d->names_len,
                .name_len = (uint8_t) de->name.len,
        };
        d->names_len += de->name.len;
        d->n++;
        d->held++;
        return true;
}

/* Requests -------------------------------------------------------------------------------------- */

static bool
send_own (Fs *fs, FsLaDir *d, const FsRequest *q)
{
        FsPending *p = fs_pending_new (fs, NULL, q->op);

        if (!p)
                return false;
        p->la = true;
        p->la_dir = (uint16_t) (d - fs->la_dirs);
        p->la_serial = d->serial;
        if (fs_send (fs, p, q) < 0) {
                fs_pending_free (fs, p);
                return false;
        }
        d->in_flight = true;
        return true;
}

/* No more reading: the listing stands as it is until it expires. */
static void
finish (Fs *fs, FsLaDir *d)
{
        d->more = false;
        if (d->handle)
                fs_send_release (fs, FS_OP_RELEASEDIR, d->handle);
        d->handle = 0;
}

static void
read_chunk (Fs *fs, FsLaDir *d)
{
        FsRequest q = {
                .op = FS_OP_READDIRPLUS, .handle = d->handle, .offset = d->offset, .size = d->chunk
        };

        if (!send_own (fs, d, &q))
                finish (fs, d);
}

static void
opened (Fs *fs, FsLaDir *d, uint32_t err, FsReader *r)
{
        uint64_t handle = err == 0 ? fs_read_u64 (r) : 0;

        if (err == 0 && (r->bad || r->left != 0 || handle == 0 || handle > FS_NODE_MAX)) {
                fs_log ("bad OPENDIR reply to a look-ahead; the directory is not listed");
                handle = 0;
        }
        if (!d) {
                /* Dropped meanwhile: the handle is nobody's. */
                if (handle)
                        fs_send_release (fs, FS_OP_RELEASEDIR, handle);
                return;
        }
        if (handle == 0) {
                /* An empty listing until it expires: no OPENDIR again at every lookup. */
                d->more = false;
                return;
        }
        d->handle = handle;
        d->offset = 0;
        d->chunk = FS_LA_FIRST_CHUNK;
        d->more = true;
        read_chunk (fs, d);
}

static void
listed (Fs *fs, FsLaDir *d, uint32_t err, FsReader *r)
{
        uint32_t count = err == 0 ? fs_read_u32 (r) : 0, i;
        FsReader start = *r;

        if (err != 0 || r->bad || !fs_dirents_valid (*r, count, true)) {
                if (err == 0) {
                        fs_log ("bad READDIRPLUS reply to a look-ahead; its entries are given "
                                "back");
                        if (!r->bad)
                                fs_forget_dirents (fs, start, 0, count);
                }
                if (d)
                        finish (fs, d);
                return;
        }
        if (!d) {
                fs_forget_dirents (fs, start, 0, count);
                return;
        }
        for (i = 0; i < count; i++) {
                FsDirent de;

                de.next_offset = fs_read_u64 (r);
                de.type = fs_read_u32 (r);
                de.name = fs_read_str (r, FS_MAX_NAME);
                fs_read_entry (r, &de.entry);
                if (!add_entry (fs, d, &de))
                        break;
                d->offset = de.next_offset;
        }
        /* At a limit, what did not fit is given back and reading stops. */
        if (i < count)
                fs_forget_dirents (fs, start, i, count);
        if (!rebuild_index (d)) {
                release_listing (fs, d, true); /* out of memory: everything goes back */
                return;
        }
        if (i < count || count == 0)
                finish (fs, d);
        else if (d->chunk < FS_MAX_DIR_REPLY)
                d->chunk *= 2;
}

void
fs_la_reply (Fs *fs, FsPending *p, const uint8_t *payload, size_t len)
{
        FsLaDir *d = p->la_dir < FS_LA_DIRS ? &fs->la_dirs[p->la_dir] : NULL;
        FsReader r;
        uint32_t err;

        if (d && (d->dir == 0 || d->serial != p->la_serial))
                d = NULL; /* the listing was dropped while this was on its way */
        if (d)
                d->in_flight = false;
        fs_reader_init (&r, payload, len);
        err = fs_read_u32 (&r);
        if (err != 0)
                fs_read_str (&r, FS_MAX_RULE); /* the rule: nobody to tell */
        if (p->op == FS_OP_OPENDIR)
                opened (fs, d, err, &r);
        else
                listed (fs, d, err, &r);
}

/* Lookups --------------------------------------------------------------------------------------- */

bool
fs_la_answer (Fs *fs, fuse_req_t req, uint64_t parent, const char *name, size_t len)
{
        struct fuse_entry_param e;
        FsLaDir *d = fs->la_dirs ? find_dir (fs, parent) : NULL;
        int64_t now, left;
        LaEntry *ent;

        if (!d || d->n == 0)
                return false;
        now = fs_now_ms ();
        left = d->listed_ms + ttl_ms (fs) - now;
        if (left <= 0) {
                release_listing (fs, d, true);
                return false;
        }
        ent = find_entry (d, name, len);
        if (!ent || ent->given)
                return false;
        ent->given = true;
        d->held--;
        d->used_ms = now;
        fs_entry_param (fs, &ent->entry, (double) left / 1000.0, &e);
        fs_debug ("lookup of %.*s answered from the listing", (int) len, name);
        /* Not delivered (the caller was interrupted): the lookup is ours to give back. */
        if (fuse_reply_entry (req, &e) < 0)
                fs_send_forget (fs, ent->entry.node, 1);
        return true;
}

void
fs_la_missed (Fs *fs, uint64_t parent)
{
        int64_t now;
        FsLaDir *d;

        if (!fs->lookahead || !fs->la_dirs || ttl_ms (fs) <= 0 || parent == FS_ROOT_NODE)
                return;
        now = fs_now_ms ();
        d = find_dir (fs, parent);
        if (d && d->listed_ms >= 0 && now >= d->listed_ms + ttl_ms (fs))
                release_listing (fs, d, true);
        if (!d)
                d = new_dir (fs, parent, now);
        d->used_ms = now;
        if (now < d->quiet_until_ms)
                return;
        /* Being read, or read whole: the name came later, or was handed out already. */
        if (d->in_flight || (d->listed_ms >= 0 && !d->more))
                return;
        if (now - d->first_miss_ms > FS_LA_WINDOW_MS) {
                d->misses = 0;
                d->first_miss_ms = now;
        }
        if (++d->misses < FS_LA_TRIGGER)
                return;
        d->misses = 0;
        /* Room for the kernel's own requests first. */
        if (held (fs) >= FS_LA_MAX_ENTRIES || fs->n_pending > FS_MAX_SLOTS / 2)
                return;
        if (d->listed_ms < 0) {
                FsRequest q = { .op = FS_OP_OPENDIR, .node = d->dir };

                if (send_own (fs, d, &q))
                        d->listed_ms = now;
        } else {
                read_chunk (fs, d);
        }
}
