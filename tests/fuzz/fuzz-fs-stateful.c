/* fuzz-fs-stateful.c — libFuzzer target for the file server's state machine.
 *
 * fuzz-fs-requests feeds raw payloads, which rarely name a node or a handle the server issued.
 * Here the input is a small program whose steps name the node ids and handle ids that the
 * server's replies handed out so far, names from a small alphabet, and share changes between
 * requests, so that lookups, opens, forgets, releases, renames, unlinks and share removal meet
 * in deep states: under ASan that finds the reference counts a guest can drive to zero while
 * something still points at the object.
 *
 * The program: byte 0 sets up the shares ("s" at share/ in mode h % 3; when (h / 3) % 2, "t" at
 * other/ in mode (h / 6) % 3; modes 0 ro, 1 rw, 2 rw-nodelete). Then steps, each an opcode
 * byte (% 32) and its argument bytes; past the end every byte reads as 0. Opcodes 1..28 are the
 * FsOp of that number (arguments in the order of FS-PROTOCOL.md), 29 a share change (action,
 * argument), 30 a new connection (fs_server_reset), 31 a deletion the person approved (share,
 * depth, names), 0 nothing. An argument byte is:
 *   node    b < 0xf0: the (b % n)th id in the table of ids seen (0 is the workspace root);
 *           else a raw id b - 0xf0 (0xff: UINT64_MAX)
 *   handle  the same over handle ids seen, released ones included
 *   name    NAMES[b % N], a symlink target TARGETS[b % N]
 *   count   a FORGET count: b, 0xfe: 2^63, 0xff: UINT64_MAX
 *   offset  b, or from b = 0xf8 on, large and edge values
 *   size    b * 64, 0xff: the op's largest
 *   mode    two bytes (type bits included)
 *
 * Checked after each step: the reply is well formed (an entry, handle or listing is exactly
 * that) and the counts stay within the limits. After each input, every handle still open is
 * released and every node forgotten with exactly the lookups its entries gave: the server must
 * then hold no handle and no node (nothing freed early, nothing leaked); once it is freed, no file
 * descriptor it opened is left; nothing outside the shares changed; with read-only shares only,
 * nothing inside them changed either.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "fs-server.h"
#include "proto.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define MAX_STEPS 1024
#define MAX_HANDLES 16
#define MAX_NODES 64
#define SHM_SIZE (FS_SHM_HEADER + 65536u)
#define STEP_SHARE 29
#define STEP_RESET 30
#define STEP_APPROVED_DELETE 31

static const char *const NAMES[] = {
        "a",   "b",    "x.txt", "d",   "sub", "empty", ".git", "hooks",  "config", "pre-commit",
        "out", "fifo", "hl",    "new", "c",   "s",     "t",    "x.txt~", "HEAD",
};
static const char *const TARGETS[] = { "a", "../outside", "/etc/passwd", ".git/hooks", "d/sub" };
static const char *const SHARE_FOLDERS[] = { "share", "other" };
static const char *const WORK_ENTRIES[] = {
        "share", "other", "outside", "keep", "audit.jsonl", NULL
};

typedef struct {
        uint64_t id;
        uint64_t lookups; /* entries the guest was given and has not forgotten */
} Node;

typedef struct {
        uint64_t id;
        bool is_dir;
        bool open;
} Handle;

typedef struct {
        const uint8_t *p;
        size_t left;
        FsServer *server;
        FsAudit *audit;
        GArray *nodes; /* Node; [0] is the workspace root */
        GHashTable *node_index; /* &id (owned) -> index + 1 in nodes */
        GArray *handles; /* Handle */
        bool changes_allowed; /* some share was writable, or the person deleted something */
        bool changed; /* a request that changes files succeeded */
} Program;

static char *work_dir;
static char *pristine; /* the shares' fingerprint as built; NULL: build them again */
static uint8_t *reply_buf, *shm;

/* An invariant broke: say which, then crash so that libFuzzer keeps the input. */
static G_NORETURN void
fail (const char *what)
{
        g_printerr ("fuzz-fs-stateful: %s\n", what);
        abort ();
}

/* The temp folder ---------------------------------------------------------------------------- */

/* Removes name in parent and everything beneath it, whatever modes the guest set; no link is
 * followed, so nothing outside the work folder can be touched. */
static void
remove_at (int parent, const char *name)
{
        g_autofd int fd = -1;
        DIR *d;
        struct dirent *e;

        if (unlinkat (parent, name, 0) == 0 || (errno != EISDIR && errno != EPERM))
                return;
        (void) !fchmodat (parent, name, 0700, 0);
        fd = openat (parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        d = fdopendir (fd);
        if (!d)
                return;
        fd = -1;
        while ((e = readdir (d)) != NULL)
                if (strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0)
                        remove_at (dirfd (d), e->d_name);
        closedir (d);
        (void) unlinkat (parent, name, AT_REMOVEDIR);
}

static void
remove_work_dir (void)
{
        remove_at (AT_FDCWD, work_dir);
}

static void
put (const char *rel, const char *contents)
{
        g_autofree char *path = g_build_filename (work_dir, rel, NULL);
        g_autofd int fd = -1;

        if (!contents) {
                g_mkdir (path, 0755);
                return;
        }
        /* Not g_file_set_contents: its temporary file and rename cost more than the input. */
        fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || write (fd, contents, strlen (contents)) != (ssize_t) strlen (contents))
                fail ("cannot build the shared folders");
}

static void
put_link (const char *rel, const char *target, bool hard)
{
        g_autofree char *path = g_build_filename (work_dir, rel, NULL);
        g_autofree char *to = hard ? g_build_filename (work_dir, target, NULL) : NULL;

        (void) !(hard ? link (to, path) : symlink (target, path));
}

/* The shared folders as every input starts with them. */
static void
build_shares (void)
{
        g_autofree char *fifo = g_build_filename (work_dir, "share", "fifo", NULL);
        g_autofd int work = open (work_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

        remove_at (work, "share");
        remove_at (work, "other");
        put ("share", NULL);
        put ("share/x.txt", "hello");
        put ("share/a", "a");
        put ("share/b", "bb");
        put ("share/d", NULL);
        put ("share/d/a", "da");
        put ("share/d/sub", NULL);
        put ("share/empty", NULL);
        put ("share/.git", NULL);
        put ("share/.git/config", "[core]");
        put ("share/.git/HEAD", "ref: refs/heads/main\n");
        put ("share/.git/hooks", NULL);
        put ("share/.git/hooks/pre-commit", "#!/bin/sh\n");
        put_link ("share/out", "../outside", false);
        put_link ("share/d/up", "../a", false);
        put_link ("share/hl", "outside/canary", true);
        mkfifo (fifo, 0644);
        put ("other", NULL);
        put ("other/a", "other");
        put ("other/c", NULL);
}

/* What the server writes beside the shares: the keep folder and the audit log. */
static void
clear_logs (void)
{
        g_autofd int work = open (work_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

        remove_at (work, "keep");
        remove_at (work, "audit.jsonl");
}

#define WORK_PREFIX "corral-fuzz-fs-stateful-"

/* A crash (the point of a fuzzer) skips atexit: the folders of runs that died go at the next
 * start. Named with the process id, so a live run's folder is never touched. */
static void
remove_stale_work_dirs (const char *base)
{
        g_autoptr (GDir) d = g_dir_open (base, 0, NULL);
        g_autofd int fd = open (base, O_PATH | O_DIRECTORY | O_CLOEXEC);
        const char *name;

        while (d && fd >= 0 && (name = g_dir_read_name (d)) != NULL) {
                const char *rest = name + strlen (WORK_PREFIX);
                char *end = NULL;
                long pid;

                if (!g_str_has_prefix (name, WORK_PREFIX))
                        continue;
                pid = strtol (rest, &end, 10);
                if (end != rest && *end == '-' && pid > 0 && kill ((pid_t) pid, 0) < 0 &&
                    errno == ESRCH)
                        remove_at (fd, name);
        }
}

static void
setup (void)
{
        /* tmpfs unless TMPDIR says otherwise: five times the inputs per second of a disk. */
        const char *base = g_getenv ("TMPDIR") ? g_getenv ("TMPDIR") : "/dev/shm";
        g_autofree char *name = NULL;

        if (access (base, W_OK) != 0)
                base = g_get_tmp_dir ();
        remove_stale_work_dirs (base);
        name = g_strdup_printf (WORK_PREFIX "%ld-XXXXXX", (long) getpid ());
        work_dir = g_build_filename (base, name, NULL);
        if (!g_mkdtemp (work_dir))
                fail ("cannot make a temporary folder");
        atexit (remove_work_dir);
        put ("outside", NULL);
        put ("outside/canary", "canary");
        reply_buf = g_malloc (PROTO_MAX_PAYLOAD);
        shm = g_malloc0 (SHM_SIZE);
}

static int
compare_names (gconstpointer a, gconstpointer b)
{
        return strcmp (*(const char *const *) a, *(const char *const *) b);
}

static void
fingerprint_line (GString *out, const char *path, const struct stat *st)
{
        g_string_append_printf (out, "%s %o %u:%u %lld %llu/%llu %lld.%ld %lld.%ld\n", path,
                                st->st_mode, st->st_uid, st->st_gid, (long long) st->st_size,
                                (unsigned long long) st->st_ino, (unsigned long long) st->st_nlink,
                                (long long) st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
                                (long long) st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

/* A tree's names, types, modes, owners, sizes, inodes and times: any change to a file, its
 * contents or its metadata moves its ctime, so equal fingerprints mean an untouched tree. */
static void
fingerprint_at (int dir, const char *prefix, GString *out)
{
        g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
        g_autofd int fd = openat (dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
        struct dirent *e;
        struct stat st;

        if (!d)
                return;
        fd = -1;
        if (fstat (dirfd (d), &st) == 0)
                fingerprint_line (out, prefix, &st);
        while ((e = readdir (d)) != NULL)
                if (strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0)
                        g_ptr_array_add (names, g_strdup (e->d_name));
        g_ptr_array_sort (names, compare_names);
        for (guint i = 0; i < names->len; i++) {
                const char *name = names->pdata[i];
                g_autofree char *path = g_strconcat (prefix, "/", name, NULL);
                g_autofd int sub = -1;

                if (fstatat (dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (!S_ISDIR (st.st_mode)) {
                        fingerprint_line (out, path, &st);
                        continue;
                }
                sub = openat (dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0)
                        fingerprint_at (sub, path, out);
                else
                        fingerprint_line (out, path, &st);
        }
        closedir (d);
}

/* The shared folders' fingerprint (the keep folder and the audit log may change). */
static char *
fingerprint (void)
{
        GString *out = g_string_new (NULL);

        for (guint i = 0; i < G_N_ELEMENTS (SHARE_FOLDERS); i++) {
                g_autofree char *path = g_build_filename (work_dir, SHARE_FOLDERS[i], NULL);
                g_autofd int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                if (fd >= 0)
                        fingerprint_at (fd, SHARE_FOLDERS[i], out);
        }
        return g_string_free (out, FALSE);
}

/* Nothing outside the shares changed: the canary, and no new name beside the shares. */
static void
check_outside (void)
{
        g_autofree char *canary = g_build_filename (work_dir, "outside", "canary", NULL);
        g_autofree char *outside = g_build_filename (work_dir, "outside", NULL);
        g_autofree char *text = NULL;
        g_autoptr (GDir) d = g_dir_open (outside, 0, NULL);
        g_autoptr (GDir) w = g_dir_open (work_dir, 0, NULL);
        const char *name;
        guint n = 0;

        if (!g_file_get_contents (canary, &text, NULL, NULL) || strcmp (text, "canary") != 0)
                fail ("a file outside the shares changed");
        while (d && g_dir_read_name (d))
                n++;
        if (n != 1)
                fail ("a name appeared outside the shares");
        while (w && (name = g_dir_read_name (w)) != NULL)
                if (!g_strv_contains (WORK_ENTRIES, name))
                        fail ("a name appeared beside the shares");
}

/* Every file the server opens is in the work folder: once it is freed, no fd may point there. */
static void
check_fds (void)
{
        g_autoptr (GDir) d = g_dir_open ("/proc/self/fd", 0, NULL);
        size_t len = strlen (work_dir);
        const char *name;

        while (d && (name = g_dir_read_name (d)) != NULL) {
                g_autofree char *link = g_build_filename ("/proc/self/fd", name, NULL);
                g_autofree char *target = g_file_read_link (link, NULL);

                if (target && strncmp (target, work_dir, len) == 0 &&
                    (target[len] == '/' || target[len] == '\0'))
                        fail ("a file descriptor outlived the server");
        }
}

/* Reading the program ------------------------------------------------------------------------ */

static uint8_t
take (Program *p)
{
        if (p->left == 0)
                return 0;
        p->left--;
        return *p->p++;
}

static uint64_t
take_node (Program *p)
{
        uint8_t b = take (p);

        if (b >= 0xf0)
                return b == 0xff ? UINT64_MAX : b - 0xf0u;
        return g_array_index (p->nodes, Node, b % p->nodes->len).id;
}

static uint64_t
take_handle (Program *p)
{
        uint8_t b = take (p);

        if (b >= 0xf0)
                return b == 0xff ? UINT64_MAX : b - 0xf0u;
        if (p->handles->len == 0)
                return b;
        return g_array_index (p->handles, Handle, b % p->handles->len).id;
}

static FsStr
take_name (Program *p, const char *const *list, size_t n)
{
        const char *s = list[take (p) % n];
        return (FsStr){ s, strlen (s) };
}

#define TAKE_NAME(p) take_name (p, NAMES, G_N_ELEMENTS (NAMES))

static uint64_t
take_count (Program *p)
{
        uint8_t b = take (p);
        return b == 0xff ? UINT64_MAX : b == 0xfe ? UINT64_C (1) << 63 : b;
}

static uint64_t
take_offset (Program *p)
{
        static const uint64_t edges[] = {
                4096,          1u << 20,  UINT64_C (1) << 31, UINT64_C (1) << 40,
                INT64_MAX - 1, INT64_MAX, UINT64_C (1) << 63, UINT64_MAX,
        };
        uint8_t b = take (p);
        return b < 0xf8 ? b : edges[b - 0xf8];
}

static uint32_t
take_size (Program *p, uint32_t max)
{
        uint32_t b = take (p);
        return b == 0xff ? max : MIN (b * 64, max);
}

static uint32_t
take_mode (Program *p)
{
        uint32_t hi = take (p);
        return hi << 8 | take (p);
}

/* Tables of what the server handed out ------------------------------------------------------- */

static Node *
node_entry (Program *p, uint64_t id, bool add)
{
        guint i = GPOINTER_TO_UINT (g_hash_table_lookup (p->node_index, &id));

        if (i == 0 && add) {
                Node n = { .id = id };
                g_array_append_val (p->nodes, n);
                i = p->nodes->len;
                g_hash_table_insert (p->node_index, g_memdup2 (&id, sizeof id),
                                     GUINT_TO_POINTER (i));
        }
        return i ? &g_array_index (p->nodes, Node, i - 1) : NULL;
}

static void
got_entry (Program *p, FsReader *r)
{
        FsEntry e;

        fs_read_entry (r, &e);
        if (r->bad || e.node <= FS_ROOT_NODE)
                fail ("a malformed entry");
        node_entry (p, e.node, true)->lookups++;
}

static void
got_handle (Program *p, FsReader *r, bool is_dir)
{
        Handle h = { .id = fs_read_u64 (r), .is_dir = is_dir, .open = true };

        for (guint i = 0; i < p->handles->len; i++)
                if (g_array_index (p->handles, Handle, i).id == h.id)
                        fail ("a handle id given out twice");
        g_array_append_val (p->handles, h);
}

static void
forgot (Program *p, uint64_t id, uint64_t n)
{
        Node *node = node_entry (p, id, false);

        if (node)
                node->lookups = n >= node->lookups ? 0 : node->lookups - n;
}

static void
released (Program *p, uint64_t id, bool is_dir)
{
        for (guint i = 0; i < p->handles->len; i++) {
                Handle *h = &g_array_index (p->handles, Handle, i);
                if (h->id == id && h->is_dir == is_dir)
                        h->open = false;
        }
}

/* Requests ------------------------------------------------------------------------------------ */

static void
read_listing (Program *p, FsReader *r, bool plus)
{
        uint32_t count = fs_read_u32 (r);

        for (uint32_t i = 0; i < count && !r->bad; i++) {
                fs_read_u64 (r);
                fs_read_u32 (r);
                if (fs_read_str (r, FS_MAX_NAME).len == 0)
                        fail ("a listing without a name");
                if (plus)
                        got_entry (p, r);
        }
}

/* Whether a successful reply to op means that files may have changed. */
static bool
changes_files (uint16_t op)
{
        switch (op) {
        case FS_OP_LOOKUP:
        case FS_OP_GETATTR:
        case FS_OP_READLINK:
        case FS_OP_READ:
        case FS_OP_READ_SHM:
        case FS_OP_OPENDIR:
        case FS_OP_READDIR:
        case FS_OP_READDIRPLUS:
        case FS_OP_RELEASE:
        case FS_OP_RELEASEDIR:
        case FS_OP_FSYNC:
        case FS_OP_STATFS:
                return false;
        default:
                return true;
        }
}

/* A successful reply's body: exactly what the op returns; learns the ids it hands out. */
static void
read_body (Program *p, const FsRequest *q, FsReader *r)
{
        switch (q->op) {
        case FS_OP_LOOKUP:
        case FS_OP_MKDIR:
        case FS_OP_SYMLINK:
        case FS_OP_LINK:
                got_entry (p, r);
                break;
        case FS_OP_CREATE:
                got_entry (p, r);
                got_handle (p, r, false);
                fs_read_u32 (r);
                break;
        case FS_OP_OPEN:
                got_handle (p, r, false);
                fs_read_u32 (r);
                break;
        case FS_OP_OPENDIR:
                got_handle (p, r, true);
                break;
        case FS_OP_READDIR:
        case FS_OP_READDIRPLUS:
                read_listing (p, r, q->op == FS_OP_READDIRPLUS);
                break;
        case FS_OP_RELEASE:
        case FS_OP_RELEASEDIR:
                released (p, q->handle, q->op == FS_OP_RELEASEDIR);
                break;
        case FS_OP_UNLINK:
        case FS_OP_RMDIR:
        case FS_OP_RENAME:
        case FS_OP_FSYNC:
                break;
        default:
                return; /* bodies that name nothing the program tracks */
        }
        if (r->bad || r->left != 0)
                fail ("a reply body of the wrong size");
}

static void
read_reply (Program *p, const FsRequest *q, const FsWriter *w)
{
        FsReader r;
        uint32_t err;

        if (w->overflow || w->len < 4)
                fail ("a reply shorter than its errno");
        fs_reader_init (&r, w->buf, w->len);
        err = fs_read_u32 (&r);
        if (err != 0) {
                fs_read_str (&r, FS_MAX_RULE);
                if (err > 4095 || r.bad || r.left != 0)
                        fail ("a malformed error reply");
                return;
        }
        if (changes_files (q->op))
                p->changed = true;
        read_body (p, q, &r);
}

static void
send (Program *p, const FsRequest *q)
{
        uint8_t buf[4096];
        FsWriter enc, w;

        fs_writer_init (&enc, buf, sizeof buf);
        if (fs_request_encode (q, &enc) < 0 || enc.overflow)
                fail ("the harness built a request it cannot encode");
        fs_writer_init (&w, reply_buf, PROTO_MAX_PAYLOAD);
        if (fs_server_handle (p->server, buf, enc.len, &w)) {
                if (q->op == FS_OP_FORGET || q->op == FS_OP_BATCH_FORGET)
                        fail ("a reply to FORGET");
                read_reply (p, q, &w);
        } else if (q->op == FS_OP_FORGET) {
                forgot (p, q->node, q->nlookup);
        } else if (q->op == FS_OP_BATCH_FORGET) {
                FsReader r;
                fs_reader_init (&r, q->data, q->data_len);
                for (uint32_t i = 0; i < q->count; i++) {
                        uint64_t id = fs_read_u64 (&r);
                        forgot (p, id, fs_read_u64 (&r));
                }
        } else {
                fail ("no reply");
        }
}

static void
take_batch_forget (Program *p, FsRequest *q, uint8_t *entries)
{
        FsWriter w;

        q->count = take (p) % 4 + 1;
        fs_writer_init (&w, entries, 16 * 4);
        for (uint32_t i = 0; i < q->count; i++) {
                fs_write_u64 (&w, take_node (p));
                fs_write_u64 (&w, take_count (p));
        }
        q->data = entries;
        q->data_len = w.len;
}

static void
take_setattr (Program *p, FsRequest *q)
{
        q->node = take_node (p);
        q->handle = take (p) & 1 ? take_handle (p) : 0;
        q->set.valid = take (p) & FS_SET_KNOWN;
        q->set.mode = take_mode (p);
        q->set.size = take_offset (p);
        q->set.atime_s = 1;
        q->set.mtime_s = 2;
}

/* Reads one request's arguments; the order is that of FS-PROTOCOL.md. */
static void
take_request (Program *p, FsRequest *q, uint8_t *scratch)
{
        switch (q->op) {
        case FS_OP_LOOKUP:
        case FS_OP_UNLINK:
        case FS_OP_RMDIR:
        case FS_OP_SETXATTR:
        case FS_OP_REMOVEXATTR:
                q->node = take_node (p);
                q->name = TAKE_NAME (p);
                break;
        case FS_OP_FORGET:
                q->node = take_node (p);
                q->nlookup = take_count (p);
                break;
        case FS_OP_BATCH_FORGET:
                take_batch_forget (p, q, scratch);
                break;
        case FS_OP_GETATTR:
        case FS_OP_READLINK:
        case FS_OP_OPENDIR:
        case FS_OP_STATFS:
                q->node = take_node (p);
                break;
        case FS_OP_SETATTR:
                take_setattr (p, q);
                break;
        case FS_OP_MKDIR:
        case FS_OP_MKNOD:
        case FS_OP_CREATE:
                q->node = take_node (p);
                q->name = TAKE_NAME (p);
                q->mode = take_mode (p);
                if (q->op == FS_OP_CREATE)
                        q->flags = take (p) & FS_O_KNOWN;
                break;
        case FS_OP_SYMLINK:
                q->node = take_node (p);
                q->name = TAKE_NAME (p);
                q->name2 = take_name (p, TARGETS, G_N_ELEMENTS (TARGETS));
                break;
        case FS_OP_RENAME:
                q->node = take_node (p);
                q->name = TAKE_NAME (p);
                q->node2 = take_node (p);
                q->name2 = TAKE_NAME (p);
                q->flags = take (p) & (FS_RENAME_NOREPLACE | FS_RENAME_EXCHANGE);
                break;
        case FS_OP_LINK:
                q->node = take_node (p);
                q->node2 = take_node (p);
                q->name2 = TAKE_NAME (p);
                break;
        case FS_OP_OPEN:
                q->node = take_node (p);
                q->flags = take (p) & (FS_O_ACCMODE | FS_O_TRUNC | FS_O_APPEND);
                break;
        case FS_OP_READ:
        case FS_OP_READDIR:
        case FS_OP_READDIRPLUS:
        case FS_OP_READ_SHM:
        case FS_OP_WRITE_SHM:
                q->handle = take_handle (p);
                q->offset = take_offset (p);
                q->size = take_size (p, q->op == FS_OP_READDIR || q->op == FS_OP_READDIRPLUS
                                                ? FS_MAX_DIR_REPLY
                                                : FS_MAX_IO);
                if (q->op == FS_OP_READ_SHM || q->op == FS_OP_WRITE_SHM)
                        q->shm_offset = FS_SHM_HEADER + take (p) * 256u;
                break;
        case FS_OP_WRITE:
                q->handle = take_handle (p);
                q->offset = take_offset (p);
                q->data_len = take (p);
                q->data_len = MIN (q->data_len, p->left);
                q->data = p->p;
                p->p += q->data_len;
                p->left -= q->data_len;
                break;
        case FS_OP_RELEASE:
        case FS_OP_RELEASEDIR:
                q->handle = take_handle (p);
                break;
        case FS_OP_FSYNC:
                q->handle = take_handle (p);
                q->flags = take (p) & 1;
                break;
        }
}

/* Share changes and the person's deletions ---------------------------------------------------- */

static void
add_share (Program *p, const char *name, const char *rel, FsMode mode)
{
        g_autofree char *path = g_build_filename (work_dir, rel, NULL);

        if (mode != FS_MODE_RO)
                p->changes_allowed = true;
        fs_server_add_share (p->server, name, path, mode, NULL, NULL);
}

static void
step_share (Program *p)
{
        static const char *const paths[] = { "share", "other", "share/d" };
        uint8_t action = take (p) % 6, arg = take (p);
        const char *name = action % 2 ? "t" : "s";
        FsMode mode = (FsMode) (arg % 3);

        switch (action) {
        case 0:
        case 1:
                fs_server_remove_share (p->server, name, NULL);
                break;
        case 2:
        case 3:
                add_share (p, name, paths[(arg / 3) % G_N_ELEMENTS (paths)], mode);
                break;
        default:
                if (mode != FS_MODE_RO)
                        p->changes_allowed = true;
                fs_server_set_mode (p->server, name, mode, NULL);
        }
}

static void
step_approved_delete (Program *p)
{
        const char *share = take (p) % 2 ? "t" : "s";
        bool two = take (p) % 2;
        FsStr first = TAKE_NAME (p), second = TAKE_NAME (p);
        g_autofree char *path =
                two ? g_strconcat (first.ptr, "/", second.ptr, NULL) : g_strdup (first.ptr);
        g_autofree char *id = NULL;

        p->changes_allowed = true;
        /* As the app does it: the entry the person was asked about, then the delete of it. */
        if (fs_server_approved_stat (p->server, share, path, &id, NULL, NULL) &&
            fs_server_approved_delete (p->server, share, path, id, NULL))
                p->changed = true;
}

static void
step_reset (Program *p)
{
        fs_server_reset (p->server);
        for (guint i = 0; i < p->nodes->len; i++)
                g_array_index (p->nodes, Node, i).lookups = 0;
        for (guint i = 0; i < p->handles->len; i++)
                g_array_index (p->handles, Handle, i).open = false;
}

static void
step (Program *p)
{
        uint8_t op = take (p) % 32;
        uint8_t scratch[16 * 4];
        FsRequest q = { .op = op };

        if (op == STEP_SHARE)
                step_share (p);
        else if (op == STEP_RESET)
                step_reset (p);
        else if (op == STEP_APPROVED_DELETE)
                step_approved_delete (p);
        else if (op >= 1 && op <= FS_OP_MAX) {
                take_request (p, &q, scratch);
                send (p, &q);
        }
        if (fs_server_n_handles (p->server) > MAX_HANDLES ||
            fs_server_n_nodes (p->server) > MAX_NODES)
                fail ("more handles or nodes than the limits");
}

/* The end of a connection as a well-behaved client ends it: every handle released, every
 * lookup given back. Then the server must hold nothing. */
static void
drain (Program *p)
{
        for (guint i = 0; i < p->handles->len; i++) {
                Handle h = g_array_index (p->handles, Handle, i);
                FsRequest q = { .op = h.is_dir ? FS_OP_RELEASEDIR : FS_OP_RELEASE, .handle = h.id };
                if (!h.open)
                        continue;
                send (p, &q);
                if (g_array_index (p->handles, Handle, i).open)
                        fail ("RELEASE of an open handle failed");
        }
        if (fs_server_n_handles (p->server) != 0)
                fail ("a handle left after every handle was released");
        for (guint i = 1; i < p->nodes->len; i++) {
                Node n = g_array_index (p->nodes, Node, i);
                FsRequest q = { .op = FS_OP_FORGET, .node = n.id, .nlookup = n.lookups };
                if (n.lookups > 0)
                        send (p, &q);
        }
        if (fs_server_n_nodes (p->server) != 0)
                fail ("a node left after every lookup was forgotten (leaked)");
}

static void
notified (const uint8_t *payload, size_t len, void *user_data)
{
        FsReader r;

        fs_reader_init (&r, payload, len);
        if (fs_read_u32 (&r) != FS_NOTIFY_INVAL_ENTRY || fs_read_u64 (&r) != FS_ROOT_NODE ||
            fs_read_str (&r, 64).len == 0 || r.bad || r.left != 0)
                fail ("a malformed notification");
}

static void
program_start (Program *p, const uint8_t *data, size_t size)
{
        g_autofree char *keep = g_build_filename (work_dir, "keep", NULL);
        g_autofree char *audit = g_build_filename (work_dir, "audit.jsonl", NULL);
        Node root = { .id = FS_ROOT_NODE };
        uint8_t h;

        *p = (Program){ .p = data, .left = size };
        p->nodes = g_array_new (FALSE, TRUE, sizeof (Node));
        p->node_index = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
        p->handles = g_array_new (FALSE, TRUE, sizeof (Handle));
        g_array_append_val (p->nodes, root);
        p->audit = fs_audit_open (audit, NULL);
        p->server = fs_server_new (keep, p->audit);
        fs_server_set_limits (p->server, MAX_HANDLES, MAX_NODES);
        fs_server_set_shm (p->server, shm, SHM_SIZE);
        fs_server_set_notify (p->server, notified, NULL);
        h = take (p);
        add_share (p, "s", "share", (FsMode) (h % 3));
        if ((h / 3) % 2)
                add_share (p, "t", "other", (FsMode) ((h / 6) % 3));
}

static void
program_end (Program *p)
{
        fs_server_free (p->server);
        fs_audit_close (p->audit);
        g_hash_table_unref (p->node_index);
        g_array_unref (p->nodes);
        g_array_unref (p->handles);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        g_autofree char *after = NULL;
        Program p;

        if (!work_dir)
                setup ();
        /* Building the shares costs more than most inputs: only after one changed them. */
        if (!pristine) {
                build_shares ();
                pristine = fingerprint ();
        }
        clear_logs ();

        program_start (&p, data, size);
        for (guint n = 0; p.left > 0 && n < MAX_STEPS; n++)
                step (&p);
        drain (&p);
        program_end (&p);
        check_fds ();

        check_outside ();
        after = fingerprint ();
        if (!p.changes_allowed && strcmp (pristine, after) != 0)
                fail ("read-only shares changed");
        if (p.changed || strcmp (pristine, after) != 0)
                g_clear_pointer (&pristine, g_free);
        return 0;
}
