/* test-mount-client.c — corral-fs against a scripted server: malformed replies, a new HELLO
 * with requests outstanding, framing garbage, and the server going away.
 *
 * The client must answer EIO (never crash, never pass garbage to the kernel), fail what was
 * outstanding when the session changes, treat inodes of the old session as stale, and unmount
 * and exit when the server closes the connection.
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
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define FUSE_SUPER_MAGIC 0x65735546

/* Node ids: the root is 1; the others move by 100 per session, as a new server's would. */
enum { N_SHARE = 2, N_FILE, N_DIR, N_BIG, N_HANG };
enum { H_SHARE_DIR = 8, H_DIR = 9, H_FILE = 20, H_BIG = 21 };

typedef struct {
        int fd;
        ProtoDecoder dec;
        GThread *thread;
        GMutex lock;
        GCond cond;
        guint session; /* 1, 2, ... */
        char nonce[PROTO_NONCE_HEX_LEN + 1];
        guint hellos_answered;
        guint hellos_requested; /* the client asked for a HELLO */
        gboolean hang_seen;
        guint bad_listings; /* READDIRPLUS replies refused for holding a bad name */
        gboolean eof;
        gboolean closed; /* the test hung up: replies still in flight are dropped */
} Fake;

typedef struct {
        char *tmpdir;
        char *mnt;
        GPid pid;
        Fake fake;
        int pty_slave; /* serial variant: our hold on the pty, so that it stays raw */
} Fixture;

/* The fake server ------------------------------------------------------------------------------- */

static void
fake_write (Fake *fake, guint8 type, guint32 channel, const void *payload, gsize len)
{
        guint8 header[PROTO_HEADER_SIZE];

        proto_header_encode (header, type, 0, channel, (guint32) len);
        g_mutex_lock (&fake->lock);
        if (fake->closed) {
                g_mutex_unlock (&fake->lock);
                return;
        }
        g_assert_cmpint (write (fake->fd, header, sizeof header), ==, sizeof header);
        if (len)
                g_assert_cmpint (write (fake->fd, payload, len), ==, (gssize) len);
        g_mutex_unlock (&fake->lock);
}

static void
fake_send_hello (Fake *fake)
{
        g_autofree char *json = NULL;

        g_mutex_lock (&fake->lock);
        fake->session++;
        g_assert_cmpint (proto_random_hex (fake->nonce, PROTO_NONCE_HEX_LEN / 2), ==, 0);
        json = g_strdup_printf (
                "{\"version\": 1, \"min_version\": 1, \"role\": \"fs-server\", \"nonce\": \"%s\"}",
                fake->nonce);
        g_mutex_unlock (&fake->lock);
        fake_write (fake, PROTO_FRAME_HELLO, 0, json, strlen (json));
}

static guint64
node (Fake *fake, guint n)
{
        return n == 1 ? 1 : n + 100u * fake->session;
}

static void
put_attr (FsWriter *w, guint64 ino, guint32 mode, guint64 size)
{
        FsAttr a = { .ino = ino, .size = size, .blocks = 1, .mode = mode, .nlink = 1 };

        fs_write_attr (w, &a);
}

static void
put_entry (Fake *fake, FsWriter *w, guint n)
{
        fs_write_u64 (w, node (fake, n));
        fs_write_u64 (w, 0);
        put_attr (w, 1000 + n, n == N_SHARE || n == N_DIR ? S_IFDIR | 0755 : S_IFREG | 0644,
                  n == N_FILE ? 5 : 10);
}

/* LOOKUP: in the share, the name says how to answer. Returns FALSE for "no reply". */
static gboolean
fake_lookup (Fake *fake, const FsRequest *q, FsWriter *w)
{
        g_autofree char *name = g_strndup (q->name.ptr, q->name.len);
        FsEntry e = { .node = node (fake, N_FILE), .attr = { .mode = S_IFREG | 0644 } };

        if (q->node == FS_ROOT_NODE || strcmp (name, "f") == 0 || strcmp (name, "d") == 0 ||
            strcmp (name, "big") == 0) {
                guint n = q->node == FS_ROOT_NODE ? N_SHARE
                          : name[0] == 'f'        ? N_FILE
                          : name[0] == 'd'        ? N_DIR
                                                  : N_BIG;

                if (q->node == FS_ROOT_NODE && strcmp (name, "s") != 0) {
                        fs_reply_error (w, ENOENT, NULL);
                        return TRUE;
                }
                fs_write_u32 (w, 0);
                put_entry (fake, w, n);
                return TRUE;
        }
        if (strcmp (name, "hang") == 0) {
                g_mutex_lock (&fake->lock);
                fake->hang_seen = TRUE;
                g_cond_broadcast (&fake->cond);
                g_mutex_unlock (&fake->lock);
                return FALSE;
        }
        if (strcmp (name, "refused") == 0) {
                fs_reply_error (w, EACCES, "protected-path");
        } else if (strcmp (name, "bad-errno") == 0) {
                fs_write_u32 (w, 70000);
                fs_write_str (w, "", 0);
        } else if (strcmp (name, "bad-rule") == 0) {
                fs_write_u32 (w, ENOENT);
                fs_write_u16 (w, 200); /* longer than the 64 allowed, and missing */
        } else if (strcmp (name, "bad-short") == 0) {
                fs_write_u32 (w, 0);
                fs_write_u64 (w, 7);
        } else if (g_str_has_prefix (name, "bad-")) {
                if (strcmp (name, "bad-node0") == 0)
                        e.node = 0;
                else if (strcmp (name, "bad-root") == 0)
                        e.node = FS_ROOT_NODE;
                else if (strcmp (name, "bad-type") == 0)
                        e.attr.mode = 0644;
                else if (strcmp (name, "bad-nsec") == 0)
                        e.attr.ctime_ns = 2000000000u;
                else if (strcmp (name, "bad-huge-node") == 0)
                        e.node = G_MAXUINT64;
                fs_write_u32 (w, 0);
                fs_write_entry (w, &e);
                if (strcmp (name, "bad-trailing") == 0)
                        fs_write_u8 (w, 0);
        } else {
                fs_reply_error (w, ENOENT, NULL);
        }
        return TRUE;
}

static void
fake_getattr (Fake *fake, const FsRequest *q, FsWriter *w)
{
        fs_write_u32 (w, 0);
        if (q->node == FS_ROOT_NODE)
                put_attr (w, 1, S_IFDIR | 0555, 0);
        else if (q->node == node (fake, N_SHARE) || q->node == node (fake, N_DIR))
                put_attr (w, 1000, S_IFDIR | 0755, 0);
        else
                put_attr (w, 1000 + (q->node % 100), S_IFREG | 0644,
                          q->node == node (fake, N_FILE) ? 5 : 10);
}

static void
fake_readdir (Fake *fake, const FsRequest *q, FsWriter *w)
{
        gboolean plus = q->op == FS_OP_READDIRPLUS;

        fs_write_u32 (w, 0);
        if (q->offset > 0) {
                fs_write_u32 (w, 0);
                return;
        }
        if (q->handle == H_DIR) {
                if (plus) {
                        g_mutex_lock (&fake->lock);
                        fake->bad_listings++;
                        g_cond_broadcast (&fake->cond);
                        g_mutex_unlock (&fake->lock);
                }
                /* A name no directory can hold: the whole reply is refused. */
                fs_write_u32 (w, 1);
                fs_write_u64 (w, 1);
                fs_write_u32 (w, S_IFREG);
                fs_write_str (w, "a/b", 3);
                if (plus)
                        put_entry (fake, w, N_FILE);
                return;
        }
        fs_write_u32 (w, 2);
        fs_write_u64 (w, 1);
        fs_write_u32 (w, S_IFREG);
        fs_write_str (w, "f", 1);
        if (plus)
                put_entry (fake, w, N_FILE);
        fs_write_u64 (w, 2);
        fs_write_u32 (w, S_IFDIR);
        fs_write_str (w, "d", 1);
        if (plus)
                put_entry (fake, w, N_DIR);
}

static gboolean
fake_handle (Fake *fake, const FsRequest *q, FsWriter *w)
{
        switch (q->op) {
        case FS_OP_LOOKUP:
                return fake_lookup (fake, q, w);
        case FS_OP_FORGET:
        case FS_OP_BATCH_FORGET:
                return FALSE;
        case FS_OP_GETATTR:
                fake_getattr (fake, q, w);
                return TRUE;
        case FS_OP_OPENDIR:
                fs_write_u32 (w, 0);
                fs_write_u64 (w, q->node == node (fake, N_DIR) ? H_DIR : H_SHARE_DIR);
                return TRUE;
        case FS_OP_READDIR:
        case FS_OP_READDIRPLUS:
                fake_readdir (fake, q, w);
                return TRUE;
        case FS_OP_OPEN:
                fs_write_u32 (w, 0);
                fs_write_u64 (w, q->node == node (fake, N_BIG) ? H_BIG : H_FILE);
                fs_write_u32 (w, 0);
                return TRUE;
        case FS_OP_READ:
                fs_write_u32 (w, 0);
                if (q->handle == H_BIG) {
                        /* One byte more than asked for. */
                        guint8 *p = fs_write_reserve (w, q->size + 1);

                        memset (p, 'b', q->size + 1);
                } else if (q->offset < 5) {
                        fs_write_bytes (w, &"hello"[q->offset], MIN (q->size, 5 - q->offset));
                }
                return TRUE;
        case FS_OP_RELEASE:
        case FS_OP_RELEASEDIR:
        case FS_OP_FSYNC:
                fs_write_u32 (w, 0);
                return TRUE;
        case FS_OP_STATFS:
                fs_write_u32 (w, 0);
                for (int i = 0; i < 5; i++)
                        fs_write_u64 (w, 1000);
                fs_write_u32 (w, 4096);
                fs_write_u32 (w, 255);
                return TRUE;
        default:
                fs_reply_error (w, ENOSYS, NULL);
                return TRUE;
        }
}

static void
fake_frame (Fake *fake, const ProtoFrame *f, guint8 *reply)
{
        FsRequest q;
        FsWriter w;

        if (f->type == PROTO_FRAME_HELLO) {
                cJSON *hello = NULL;
                const char *role = NULL, *nonce = NULL;

                const char *request = NULL;

                g_assert_cmpint (proto_json_parse (f->payload, f->length, &hello), ==, 0);
                g_assert_cmpint (proto_json_get_string (hello, "role", 32, &role), ==, 0);
                g_assert_cmpstr (role, ==, "fs-client");
                if (proto_json_get_string (hello, "request", 16, &request) == 0) {
                        /* A client that started after our HELLO went by asks for another. */
                        g_assert_cmpstr (request, ==, "hello");
                        cJSON_Delete (hello);
                        g_mutex_lock (&fake->lock);
                        fake->hellos_requested++;
                        g_mutex_unlock (&fake->lock);
                        fake_send_hello (fake);
                        return;
                }
                g_assert_cmpint (proto_json_get_string (hello, "nonce", 64, &nonce), ==, 0);
                g_mutex_lock (&fake->lock);
                g_assert_cmpstr (nonce, ==, fake->nonce);
                cJSON_Delete (hello);
                fake->hellos_answered++;
                g_cond_broadcast (&fake->cond);
                g_mutex_unlock (&fake->lock);
                return;
        }
        g_assert_cmpint (f->type, ==, PROTO_FRAME_FS_REQUEST);
        /* The client never sends what the server would refuse to decode. */
        g_assert_cmpint (fs_request_decode (f->payload, f->length, &q), ==, 0);
        fs_writer_init (&w, reply, PROTO_MAX_PAYLOAD);
        if (fake_handle (fake, &q, &w))
                fake_write (fake, PROTO_FRAME_FS_REPLY, f->channel, reply, w.len);
}

static gpointer
fake_main (gpointer data)
{
        Fake *fake = data;
        g_autofree guint8 *reply = g_malloc (PROTO_MAX_PAYLOAD);

        for (;;) {
                ProtoFrame f;
                size_t room;
                guint8 *p = proto_decoder_space (&fake->dec, &room);
                gssize n = read (fake->fd, p, room);
                int r;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                proto_decoder_commit (&fake->dec, (size_t) n);
                while ((r = proto_decoder_next (&fake->dec, &f)) > 0)
                        fake_frame (fake, &f, reply);
                g_assert_cmpint (r, ==, 0);
        }
        g_mutex_lock (&fake->lock);
        fake->eof = TRUE;
        g_cond_broadcast (&fake->cond);
        g_mutex_unlock (&fake->lock);
        return NULL;
}

static void
fake_wait (Fake *fake, const gboolean *flag, const guint *count, guint at_least)
{
        gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

        g_mutex_lock (&fake->lock);
        while (!(flag ? *flag : *count >= at_least))
                if (!g_cond_wait_until (&fake->cond, &fake->lock, deadline))
                        g_error ("fake server: timed out");
        g_mutex_unlock (&fake->lock);
}

/* Setup ----------------------------------------------------------------------------------------- */

static gboolean
is_fuse (const char *path)
{
        struct statfs sf;

        return statfs (path, &sf) == 0 && (unsigned long) sf.f_type == FUSE_SUPER_MAGIC;
}

static void
fixture_setup (Fixture *f, gconstpointer data)
{
        const char *fs_path = g_getenv ("CORRAL_FS_PATH");
        int pair[2], source_fds[1], target_fds[1] = { 3 };
        g_autoptr (GError) error = NULL;
        gint64 deadline;

        if (!fs_path || g_access ("/dev/fuse", R_OK | W_OK) != 0 || geteuid () != 0) {
                g_test_skip ("needs root, /dev/fuse and CORRAL_FS_PATH");
                return;
        }
        f->tmpdir = g_dir_make_tmp ("corral-client-XXXXXX", &error);
        g_assert_no_error (error);
        f->mnt = g_build_filename (f->tmpdir, "mnt", NULL);
        g_assert_cmpint (g_mkdir (f->mnt, 0755), ==, 0);
        f->pty_slave = -1;
        if (g_strcmp0 (data, "serial") == 0) {
                /* A pty in raw mode stands in for the virtio-serial port. */
                struct termios tio;

                pair[0] = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC);
                g_assert_cmpint (pair[0], >=, 0);
                g_assert_cmpint (grantpt (pair[0]), ==, 0);
                g_assert_cmpint (unlockpt (pair[0]), ==, 0);
                f->pty_slave = open (ptsname (pair[0]), O_RDWR | O_NOCTTY | O_CLOEXEC);
                g_assert_cmpint (f->pty_slave, >=, 0);
                g_assert_cmpint (tcgetattr (f->pty_slave, &tio), ==, 0);
                cfmakeraw (&tio);
                g_assert_cmpint (tcsetattr (f->pty_slave, TCSANOW, &tio), ==, 0);
                g_spawn_async_with_pipes_and_fds (
                        NULL,
                        (const char *const[]){ fs_path, "--serial", ptsname (pair[0]), f->mnt,
                                               NULL },
                        NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, -1, STDERR_FILENO,
                        STDERR_FILENO, NULL, NULL, 0, &f->pid, NULL, NULL, NULL, &error);
                g_assert_no_error (error);
        } else if (g_strcmp0 (data, "unix") == 0) {
                /* --unix: the client connects to a listening socket, as to a QEMU chardev. */
                g_autofree char *sock = g_build_filename (f->tmpdir, "fs.sock", NULL);
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                int lfd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

                g_assert_cmpint (lfd, >=, 0);
                g_assert_cmpuint (strlen (sock), <, sizeof sa.sun_path);
                memcpy (sa.sun_path, sock, strlen (sock));
                g_assert_cmpint (bind (lfd, (struct sockaddr *) &sa, sizeof sa), ==, 0);
                g_assert_cmpint (listen (lfd, 1), ==, 0);
                g_spawn_async_with_pipes_and_fds (
                        NULL, (const char *const[]){ fs_path, "--unix", sock, f->mnt, NULL }, NULL,
                        G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, -1, STDERR_FILENO, STDERR_FILENO,
                        NULL, NULL, 0, &f->pid, NULL, NULL, NULL, &error);
                g_assert_no_error (error);
                pair[0] = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC);
                g_assert_cmpint (pair[0], >=, 0);
                close (lfd);
                g_unlink (sock);
        } else {
                g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), ==, 0);
                source_fds[0] = pair[1];
                g_spawn_async_with_pipes_and_fds (
                        NULL, (const char *const[]){ fs_path, "--fd", "3", f->mnt, NULL }, NULL,
                        G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, -1, STDERR_FILENO, STDERR_FILENO,
                        source_fds, target_fds, 1, &f->pid, NULL, NULL, NULL, &error);
                g_assert_no_error (error);
                close (pair[1]);
        }

        f->fake.fd = pair[0];
        g_assert_cmpint (proto_decoder_init (&f->fake.dec, 0), ==, 0);
        g_mutex_init (&f->fake.lock);
        g_cond_init (&f->fake.cond);
        f->fake.thread = g_thread_new ("fake-fsd", fake_main, &f->fake);
        /* "quiet": as when the client restarted after the server's HELLO went by: it asks. */
        if (g_strcmp0 (data, "quiet") != 0)
                fake_send_hello (&f->fake);
        fake_wait (&f->fake, NULL, &f->fake.hellos_answered, 1);

        deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
        while (!is_fuse (f->mnt)) {
                g_assert_cmpint (g_get_monotonic_time (), <, deadline);
                g_usleep (10000);
        }
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        if (!f->tmpdir)
                return;
        if (is_fuse (f->mnt))
                umount2 (f->mnt, MNT_DETACH);
        if (f->pid && !mount_harness_wait_pid (&f->pid, 5000, NULL)) {
                kill (f->pid, SIGKILL);
                mount_harness_wait_pid (&f->pid, 5000, NULL);
        }
        if (f->pty_slave >= 0)
                close (f->pty_slave); /* with the client gone, the master reads EIO */
        if (f->fake.fd >= 0) {
                shutdown (f->fake.fd, SHUT_RDWR);
                g_thread_join (f->fake.thread);
                close (f->fake.fd);
        }
        proto_decoder_clear (&f->fake.dec);
        g_mutex_clear (&f->fake.lock);
        g_cond_clear (&f->fake.cond);
        g_rmdir (f->mnt);
        g_rmdir (f->tmpdir);
        g_free (f->mnt);
        g_free (f->tmpdir);
}

static char *
in_share (Fixture *f, const char *name)
{
        return g_build_filename (f->mnt, "s", name, NULL);
}

static void
assert_alive (Fixture *f)
{
        g_autofree char *file = in_share (f, "f");
        g_autofree char *data = NULL;
        g_autoptr (GError) error = NULL;

        g_file_get_contents (file, &data, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (data, ==, "hello");
        g_assert_true (mount_harness_wait_pid (&f->pid, 0, NULL) == FALSE);
}

/* Tests ----------------------------------------------------------------------------------------- */

static void
test_malformed (Fixture *f, gconstpointer data)
{
        static const char *const bad[] = { "bad-errno",     "bad-rule",  "bad-node0",
                                           "bad-root",      "bad-type",  "bad-nsec",
                                           "bad-huge-node", "bad-short", "bad-trailing" };
        g_autofree char *refused = NULL, *big = NULL, *dir = NULL;
        struct stat st;
        char buf[64];
        int fd;

        if (!f->tmpdir)
                return;
        assert_alive (f);
        for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autofree char *path = in_share (f, bad[i]);

                errno = 0;
                g_assert_cmpint (stat (path, &st), ==, -1);
                g_test_message ("%s: %s", bad[i], g_strerror (errno));
                g_assert_cmpint (errno, ==, EIO);
        }
        /* A refusal by a rule is passed on as it is. */
        refused = in_share (f, "refused");
        g_assert_cmpint (stat (refused, &st), ==, -1);
        g_assert_cmpint (errno, ==, EACCES);

        /* More data than asked for. */
        big = in_share (f, "big");
        fd = open (big, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint (fd, >=, 0);
        g_assert_cmpint (read (fd, buf, sizeof buf), ==, -1);
        g_assert_cmpint (errno, ==, EIO);
        close (fd);

        /* A directory entry with a '/' in its name. */
        dir = in_share (f, "d");
        {
                g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);

                g_assert_nonnull (d);
                errno = 0;
                g_assert_null (g_dir_read_name (d));
        }
        assert_alive (f);
}

static gpointer
stat_hang (gpointer data)
{
        Fixture *f = data;
        g_autofree char *path = in_share (f, "hang");
        struct stat st;

        if (stat (path, &st) == 0)
                return GINT_TO_POINTER (0);
        return GINT_TO_POINTER (errno);
}

static void
test_new_hello (Fixture *f, gconstpointer data)
{
        g_autofree char *dir = NULL;
        GThread *t;
        struct stat st;
        int dfd;

        if (!f->tmpdir)
                return;
        assert_alive (f);
        dir = in_share (f, "d");
        dfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint (dfd, >=, 0);

        /* A request the server never answers, then the server starts over. */
        t = g_thread_new ("stat-hang", stat_hang, f);
        fake_wait (&f->fake, &f->fake.hang_seen, NULL, 0);
        fake_send_hello (&f->fake);
        g_assert_cmpint (GPOINTER_TO_INT (g_thread_join (t)), ==, EIO);
        fake_wait (&f->fake, NULL, &f->fake.hellos_answered, 2);

        /* The old session's inode is stale; paths are looked up again and work. */
        g_assert_cmpint (fstatat (dfd, "zzz", &st, 0), ==, -1);
        g_assert_cmpint (errno, ==, ESTALE);
        close (dfd);
        assert_alive (f);
}

/* The client lists d by itself after lookups of existing names in it (lookahead.c); a bad
 * listing is dropped, and lookups go on at the server. */
/* A client that finds no HELLO (the server sent it to the client before this one) asks for
 * one, once, and then serves the guest. */
static void
test_asks_for_hello (Fixture *f, gconstpointer data)
{
        g_autofree char *path = g_build_filename (f->mnt, "s", "f", NULL);
        g_autofree char *text = NULL;

        g_assert_cmpuint (f->fake.hellos_requested, ==, 1);
        g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
        g_assert_cmpstr (text, ==, "hello");
        g_assert_cmpuint (f->fake.hellos_requested, ==, 1);
}

static void
test_bad_listing (Fixture *f, gconstpointer data)
{
        static const char *const names[] = { "d/f", "d/big" };
        struct stat st;

        if (!f->tmpdir)
                return;
        for (guint i = 0; i < G_N_ELEMENTS (names); i++) {
                g_autofree char *path = in_share (f, names[i]);

                g_assert_cmpint (lstat (path, &st), ==, 0);
        }
        fake_wait (&f->fake, NULL, &f->fake.bad_listings, 1);
        g_usleep (1200 * 1000); /* the kernel's entries expire */
        {
                g_autofree char *path = in_share (f, "d/f");

                g_assert_cmpint (lstat (path, &st), ==, 0);
                g_assert_cmpint (st.st_size, ==, 5);
        }
        assert_alive (f);
}

static void
test_framing_garbage (Fixture *f, gconstpointer data)
{
        guint8 garbage[300];

        if (!f->tmpdir)
                return;
        assert_alive (f);
        for (guint i = 0; i < sizeof garbage; i++)
                garbage[i] = (guint8) (i * 37 + 11);
        g_mutex_lock (&f->fake.lock);
        g_assert_cmpint (write (f->fake.fd, garbage, sizeof garbage), ==, sizeof garbage);
        g_mutex_unlock (&f->fake.lock);
        /* The client drops everything up to the next HELLO and carries on. */
        fake_send_hello (&f->fake);
        fake_wait (&f->fake, NULL, &f->fake.hellos_answered, 2);
        g_usleep (1200 * 1000); /* old entries expire */
        assert_alive (f);
}

static void
test_server_gone (Fixture *f, gconstpointer data)
{
        int status = -1;

        if (!f->tmpdir)
                return;
        assert_alive (f);
        g_mutex_lock (&f->fake.lock);
        f->fake.closed = TRUE;
        shutdown (f->fake.fd, SHUT_RDWR);
        g_mutex_unlock (&f->fake.lock);
        /* corral-fs unmounts and exits by itself. */
        g_assert_true (mount_harness_wait_pid (&f->pid, 5000, &status));
        g_assert_true (WIFEXITED (status));
        g_assert_cmpint (WEXITSTATUS (status), ==, 0);
        g_assert_false (is_fuse (f->mnt));
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        if (g_getenv ("CORRAL_VALGRIND")) {
                /* The scripted server is a thread of this process and the mount is served
                 * through it: valgrind runs one thread at a time and keeps its lock across
                 * stat() and open(), so a syscall on the mount waits forever for the server.
                 * The ASan run covers this test instead. */
                printf ("1..0 # SKIP in-process FUSE server under valgrind\n");
                return 0;
        }
        /* The scripted server writes to a client that may have hung up already (that is what
         * some cases test): a closed socket is an error return here, not a signal. */
        signal (SIGPIPE, SIG_IGN);
#define ADD(path, func) g_test_add (path, Fixture, NULL, fixture_setup, func, fixture_teardown)
        ADD ("/mount/client/malformed-replies", test_malformed);
        ADD ("/mount/client/new-hello", test_new_hello);
        ADD ("/mount/client/framing-garbage", test_framing_garbage);
        ADD ("/mount/client/server-gone", test_server_gone);
        ADD ("/mount/client/lookahead-bad-listing", test_bad_listing);
#undef ADD
        /* The same over a (pty standing in for a) virtio-serial port, which never closes. */
#define ADD(path, func) g_test_add (path, Fixture, "serial", fixture_setup, func, fixture_teardown)
        ADD ("/mount/client/serial/malformed-replies", test_malformed);
        ADD ("/mount/client/serial/new-hello", test_new_hello);
        ADD ("/mount/client/serial/framing-garbage", test_framing_garbage);
#undef ADD
        /* The same connecting to a listening unix socket (--unix). */
#define ADD(path, func) g_test_add (path, Fixture, "unix", fixture_setup, func, fixture_teardown)
        ADD ("/mount/client/unix/malformed-replies", test_malformed);
        ADD ("/mount/client/unix/server-gone", test_server_gone);
#undef ADD
        g_test_add ("/mount/client/asks-for-hello", Fixture, "quiet", fixture_setup,
                    test_asks_for_hello, fixture_teardown);
        return g_test_run ();
}
