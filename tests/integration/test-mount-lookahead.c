/* test-mount-lookahead.c — corral-fs answering lookups from a listing it read ahead
 * (mounts/client/lookahead.c), through a real mount of the real server, with the test
 * relaying and counting every frame between the two.
 *
 * A scan of a folder must cost a handful of LOOKUP round trips instead of one per name and
 * return the same attributes; every listed entry that the kernel was not given goes back to
 * the server (FORGET) and every directory the client opened is released; a change made
 * through the mount drops what was listed; a listing does not outlive the attribute timeout;
 * with --no-lookahead or a zero timeout nothing is listed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "mount-harness.h"
#include "fs.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define N_FILES 300
#define N_SEEN 20 /* files looked up before the folder changes */

/* What passed through the relay. */
typedef struct {
        GMutex lock;
        GHashTable *ops; /* request id -> op, until its reply */
        guint file_lookups; /* LOOKUPs of names "f..." */
        guint listed; /* entries in READDIRPLUS replies */
        guint64 forgotten; /* nlookup in FORGET and BATCH_FORGET */
        guint opendirs, releasedirs;
} Counts;

typedef struct {
        int fsd_fd, fs_fd;
        Counts *counts;
        GThread *thread;
} Relay;

typedef struct {
        char *dir; /* the shared folder on the host */
        MountHarness *h;
        Counts counts;
        Relay relay;
} Fixture;

static void
count_request (Counts *c, guint32 id, const guint8 *payload, size_t len)
{
        FsRequest q;

        /* The client only ever sends what the server can decode. */
        g_assert_cmpint (fs_request_decode (payload, len, &q), ==, 0);
        g_mutex_lock (&c->lock);
        if (q.op == FS_OP_LOOKUP && q.name.len > 0 && q.name.ptr[0] == 'f')
                c->file_lookups++;
        if (q.op == FS_OP_FORGET)
                c->forgotten += q.nlookup;
        if (q.op == FS_OP_BATCH_FORGET) {
                FsReader r;

                fs_reader_init (&r, q.data, q.data_len);
                for (guint32 i = 0; i < q.count; i++) {
                        fs_read_u64 (&r);
                        c->forgotten += fs_read_u64 (&r);
                }
        }
        if (q.op == FS_OP_OPENDIR)
                c->opendirs++;
        if (q.op == FS_OP_RELEASEDIR)
                c->releasedirs++;
        if (q.op != FS_OP_FORGET && q.op != FS_OP_BATCH_FORGET)
                g_hash_table_insert (c->ops, GUINT_TO_POINTER (id), GUINT_TO_POINTER (q.op));
        g_mutex_unlock (&c->lock);
}

static void
count_reply (Counts *c, guint32 id, const guint8 *payload, size_t len)
{
        FsReader r;
        guint op;

        g_mutex_lock (&c->lock);
        op = GPOINTER_TO_UINT (g_hash_table_lookup (c->ops, GUINT_TO_POINTER (id)));
        g_hash_table_remove (c->ops, GUINT_TO_POINTER (id));
        fs_reader_init (&r, payload, len);
        if (op == FS_OP_READDIRPLUS && fs_read_u32 (&r) == 0)
                c->listed += fs_read_u32 (&r);
        g_mutex_unlock (&c->lock);
}

/* Copies what from has to to, looking at each whole frame on the way. false at the end. */
static gboolean
pass_on (Relay *relay, int from, int to, ProtoDecoder *dec)
{
        size_t room;
        guint8 *p = proto_decoder_space (dec, &room);
        gssize n = read (from, p, room);
        ProtoFrame f;
        int r;

        if (n < 0 && errno == EINTR)
                return TRUE;
        if (n <= 0)
                return FALSE;
        for (gssize done = 0; done < n;) {
                gssize w = write (to, p + done, (size_t) (n - done));

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return FALSE;
                done += w;
        }
        proto_decoder_commit (dec, (size_t) n);
        while ((r = proto_decoder_next (dec, &f)) > 0) {
                if (f.type == PROTO_FRAME_FS_REQUEST)
                        count_request (relay->counts, f.channel, f.payload, f.length);
                else if (f.type == PROTO_FRAME_FS_REPLY)
                        count_reply (relay->counts, f.channel, f.payload, f.length);
        }
        g_assert_cmpint (r, ==, 0);
        return TRUE;
}

static gpointer
relay_main (gpointer data)
{
        Relay *relay = data;
        ProtoDecoder to_fsd, to_fs;

        g_assert_cmpint (proto_decoder_init (&to_fsd, 0), ==, 0);
        g_assert_cmpint (proto_decoder_init (&to_fs, 0), ==, 0);
        for (;;) {
                struct pollfd pfd[2] = { { relay->fs_fd, POLLIN, 0 },
                                         { relay->fsd_fd, POLLIN, 0 } };

                if (poll (pfd, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (pfd[0].revents && !pass_on (relay, relay->fs_fd, relay->fsd_fd, &to_fsd))
                        break;
                if (pfd[1].revents && !pass_on (relay, relay->fsd_fd, relay->fs_fd, &to_fs))
                        break;
        }
        /* One side hung up: so does the other, and both children exit. */
        shutdown (relay->fs_fd, SHUT_RDWR);
        shutdown (relay->fsd_fd, SHUT_RDWR);
        proto_decoder_clear (&to_fsd);
        proto_decoder_clear (&to_fs);
        return NULL;
}

static void
start_relay (int fsd_fd, int fs_fd, gpointer user_data)
{
        Relay *relay = user_data;

        relay->fsd_fd = fsd_fd;
        relay->fs_fd = fs_fd;
        relay->thread = g_thread_new ("relay", relay_main, relay);
}

static void
snapshot (Fixture *f, Counts *ret)
{
        g_mutex_lock (&f->counts.lock);
        *ret = f->counts;
        g_mutex_unlock (&f->counts.lock);
}

/* Fixture --------------------------------------------------------------------------------------- */

static void
fixture_setup (Fixture *f, gconstpointer data)
{
        const char *timeout = data ? data : "30";
        const char *no_lookahead[] = { "--no-lookahead", NULL };
        const char *fs_args[] = { "--attr-timeout", timeout, NULL, NULL };
        g_autofree char *spec = NULL;
        g_autoptr (GError) error = NULL;

        if (g_strcmp0 (data, "off") == 0) {
                fs_args[1] = "30";
                fs_args[2] = no_lookahead[0];
        }
        f->dir = g_dir_make_tmp ("corral-lookahead-XXXXXX", &error);
        g_assert_no_error (error);
        {
                g_autofree char *sub = g_build_filename (f->dir, "d", NULL);

                g_assert_cmpint (g_mkdir (sub, 0755), ==, 0);
                /* File i holds i bytes, so every size says which file it came from. */
                for (int i = 0; i < N_FILES; i++) {
                        g_autofree char *name = g_strdup_printf ("%s/f%d", sub, i);
                        g_autofree char *content = g_strnfill ((gsize) i, 'x');

                        g_file_set_contents (name, content, i, &error);
                        g_assert_no_error (error);
                }
        }
        g_mutex_init (&f->counts.lock);
        f->counts.ops = g_hash_table_new (NULL, NULL);
        f->relay.counts = &f->counts;
        spec = g_strdup_printf ("s:rw:%s", f->dir);
        f->h = mount_harness_new_relayed ((const char *const[]){ spec, NULL }, NULL, fs_args,
                                          start_relay, &f->relay, &error);
        if (!f->h)
                mount_harness_skip_or_fail (error);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", f->dir);

        mount_harness_free (f->h);
        if (f->relay.thread) {
                g_thread_join (f->relay.thread);
                close (f->relay.fs_fd);
                close (f->relay.fsd_fd);
        }
        g_hash_table_unref (f->counts.ops);
        g_mutex_clear (&f->counts.lock);
        g_assert_true (g_spawn_command_line_sync (rm, NULL, NULL, NULL, NULL));
        g_free (f->dir);
}

static char *
file_path (Fixture *f, int i)
{
        g_autofree char *rel = g_strdup_printf ("d/f%d", i);

        return mount_harness_path (f->h, "s", rel);
}

/* lstat()s files [from, to) through the mount, checking each one's size. */
static void
stat_files (Fixture *f, int from, int to)
{
        for (int i = from; i < to; i++) {
                g_autofree char *path = file_path (f, i);
                struct stat st;

                g_assert_cmpint (lstat (path, &st), ==, 0);
                g_assert_cmpint (st.st_size, ==, i);
                g_assert_true (S_ISREG (st.st_mode));
        }
}

static void
host_resize (Fixture *f, int i, gsize size)
{
        g_autofree char *path = g_strdup_printf ("%s/d/f%d", f->dir, i);
        g_autofree char *content = g_strnfill (size, 'y');
        g_autoptr (GError) error = NULL;

        g_file_set_contents (path, content, (gssize) size, &error);
        g_assert_no_error (error);
}

static off_t
mount_size (Fixture *f, int i)
{
        g_autofree char *path = file_path (f, i);
        struct stat st;

        g_assert_cmpint (lstat (path, &st), ==, 0);
        return st.st_size;
}

/* Waits (up to 5 s) until done() holds for the counts. */
static void
wait_counts (Fixture *f, gboolean (*done) (const Counts *c, gpointer), gpointer data)
{
        /* Generous: a loaded machine (CI's two cores) is slow, not wrong. */
        gint64 deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
        Counts c;

        for (snapshot (f, &c); !done (&c, data); snapshot (f, &c)) {
                if (g_get_monotonic_time () > deadline)
                        g_error ("after 30 s: %u file lookups, %u listed, %" G_GUINT64_FORMAT
                                 " forgotten, %u opendir, %u releasedir",
                                 c.file_lookups, c.listed, c.forgotten, c.opendirs, c.releasedirs);
                g_usleep (10000);
        }
}

static gboolean
listed_at_least (const Counts *c, gpointer data)
{
        return c->listed >= GPOINTER_TO_UINT (data);
}

/* lstat()s every file once, in order, and returns what the server saw. */
static void
scan_all (Fixture *f, Counts *ret)
{
        stat_files (f, 0, N_FILES);
        snapshot (f, ret);
        g_test_message ("%u of %d lookups reached the server; %u entries listed, %u opendir",
                        ret->file_lookups, N_FILES, ret->listed, ret->opendirs);
}

/* Tests ----------------------------------------------------------------------------------------- */

static void
test_scan (Fixture *f, gconstpointer data)
{
        Counts c;

        if (!f->h)
                return;
        scan_all (f, &c);
        /* Two to start a listing, a few while it is on its way, a few for each next chunk. */
        g_assert_cmpuint (c.file_lookups, <, 40);
        g_assert_cmpuint (c.listed, >=, N_FILES - c.file_lookups);
}

static void
test_off (Fixture *f, gconstpointer data)
{
        Counts c;

        if (!f->h)
                return;
        scan_all (f, &c);
        /* Every lookup is the server's, and nothing is listed behind the kernel's back. */
        g_assert_cmpuint (c.file_lookups, ==, N_FILES);
        g_assert_cmpuint (c.listed, ==, 0);
        g_assert_cmpuint (c.opendirs, ==, 0);
}

typedef struct {
        guint listed;
        guint answered_here; /* lookups of stat_files() that never reached the server */
} Expected;

static gboolean
all_given_back (const Counts *c, gpointer data)
{
        const Expected *e = data;

        /* Every listed entry went to the kernel or back to the server; every handle back. The
         * lookups that were answered here are counted now, not when the listing was read: under
         * load the kernel's last lookup can reach the server after stat() returned. */
        guint answered_here = N_SEEN > c->file_lookups ? N_SEEN - c->file_lookups : 0;

        /* The listing may still be arriving when the test first looks (a loaded machine): what
         * counts is what was listed once its handle is back. */
        return c->listed >= e->listed && c->forgotten == c->listed - answered_here &&
               c->releasedirs == c->opendirs;
}

static void
test_references (Fixture *f, gconstpointer data)
{
        Counts c;
        Expected e;

        if (!f->h)
                return;
        /* A few names of a big folder: the listing holds far more than the kernel takes. */
        stat_files (f, 0, N_SEEN);
        snapshot (f, &c);
        g_assert_cmpuint (c.listed, >, 0);
        e.listed = c.listed;
        e.answered_here = N_SEEN - c.file_lookups;
        g_assert_cmpuint (e.answered_here, >, 0);
        /* The listing expires after the attribute timeout (0.3 s here) and gives back the rest
         * (the kernel keeps what it was given: its dentries are still cached). */
        wait_counts (f, all_given_back, &e);
        snapshot (f, &c);
        /* Nothing listed twice. */
        g_assert_cmpuint (c.listed, <=, N_FILES);
}

/* The first N_SEEN files are looked up, so that the client lists the folder (its first chunk
 * about 200 names); then every other file changes size on the host, behind the listing. */
static void
list_then_change_on_host (Fixture *f)
{
        stat_files (f, 0, N_SEEN);
        wait_counts (f, listed_at_least, GUINT_TO_POINTER (150));
        for (int i = N_SEEN; i < N_FILES; i++)
                host_resize (f, i, 1000);
}

static void
assert_changes_seen (Fixture *f)
{
        for (int i = N_SEEN; i < N_FILES; i++)
                g_assert_cmpint (mount_size (f, i), ==, 1000);
}

static void
test_change_drops (Fixture *f, gconstpointer data)
{
        g_autofree char *created = NULL;
        g_autoptr (GError) error = NULL;
        Counts c;

        if (!f->h)
                return;
        list_then_change_on_host (f);
        /* Anything changed through the mount makes the listing useless, even with a 30 s
         * attribute timeout. */
        created = mount_harness_path (f->h, "s", "d/new");
        g_file_set_contents (created, "new", -1, &error);
        g_assert_no_error (error);
        assert_changes_seen (f);
        snapshot (f, &c);
        g_assert_cmpuint (c.file_lookups, >=, N_FILES - N_SEEN);
}

static void
test_expires (Fixture *f, gconstpointer data)
{
        if (!f->h)
                return;
        list_then_change_on_host (f);
        /* Past the 0.3 s attribute timeout, nothing listed before is handed out. */
        g_usleep (600 * 1000);
        assert_changes_seen (f);
}

static void
test_zero_timeout (Fixture *f, gconstpointer data)
{
        Counts c;

        if (!f->h)
                return;
        scan_all (f, &c);
        /* No caching asked for: nothing listed ahead either, not even opened. */
        g_assert_cmpuint (c.listed, ==, 0);
        g_assert_cmpuint (c.opendirs, ==, 0);
        g_assert_cmpuint (c.file_lookups, >=, N_FILES);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        if (g_getenv ("CORRAL_VALGRIND")) {
                /* The relay is a thread of this process and the mount is served through it:
                 * valgrind runs one thread at a time and keeps its lock across lstat(), so a
                 * lookup on the mount would wait forever for the relay. The ASan run covers this
                 * test instead. */
                printf ("1..0 # SKIP in-process relay under valgrind\n");
                return 0;
        }
        /* A relay write to a side that hung up is an error return, not a signal. */
        signal (SIGPIPE, SIG_IGN);
#define ADD(path, data, func)                                                                      \
        g_test_add (path, Fixture, data, fixture_setup, func, fixture_teardown)
        ADD ("/mount-lookahead/scan", NULL, test_scan);
        ADD ("/mount-lookahead/off", "off", test_off);
        ADD ("/mount-lookahead/references", "0.3", test_references);
        ADD ("/mount-lookahead/change-drops-listing", NULL, test_change_drops);
        ADD ("/mount-lookahead/expires", "0.3", test_expires);
        ADD ("/mount-lookahead/zero-timeout", "0", test_zero_timeout);
#undef ADD
        return g_test_run ();
}
