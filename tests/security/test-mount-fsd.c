/* test-mount-fsd.c — the real corral-fsd process, driven over its channel as a hostile guest
 * would: what only the whole program can show (its fds, its memory while replies go unread,
 * request sequences that reach freed state).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs-client.h"
#include "fsd-peer.h"

#define SHARE_NODE 2 /* the first node the server issues: "s" */

static FsdPeer *
start_on (FsClient *c, const char *mode, const char *control)
{
        g_autofree char *spec = g_strdup_printf ("s:%s:%s", mode, c->share);
        const char *args[] = { "--share", spec, control ? "--control" : NULL, control, NULL };

        return fsd_peer_start (args);
}

static uint64_t
lookup (FsdPeer *peer, uint64_t parent, const char *name)
{
        FsRequest q = { .op = FS_OP_LOOKUP, .node = parent, .name = { name, strlen (name) } };
        FsReader r;
        FsEntry e;

        g_assert_cmpint (fsd_peer_call (peer, 1, &q, &r), ==, 0);
        fs_read_entry (&r, &e);
        return e.node;
}

static uint64_t
open_node (FsdPeer *peer, uint64_t node, uint32_t flags)
{
        FsRequest q = { .op = FS_OP_OPEN, .node = node, .flags = flags };
        FsReader r;

        g_assert_cmpint (fsd_peer_call (peer, 1, &q, &r), ==, 0);
        return fs_read_u64 (&r);
}

/* F10. Every fd of the server is close-on-exec ------------------------------------------------ */

static void
test_fds_cloexec (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        g_autofree char *control = g_build_filename (c->dir, "control.sock", NULL);
        g_autoptr (FsdPeer) peer = NULL;
        g_autofree char *fddir = NULL;
        g_autoptr (GDir) d = NULL;
        const char *name;
        guint checked = 0;
        uint64_t file;

        fs_client_host_write (c, "a", "a");
        peer = start_on (c, "rw", control);
        /* Make the server hold share, node, file and folder fds. */
        file = lookup (peer, lookup (peer, FS_ROOT_NODE, "s"), "a");
        open_node (peer, file, FS_O_RDWR);
        {
                FsRequest q = { .op = FS_OP_OPENDIR, .node = SHARE_NODE };
                g_assert_cmpint (fsd_peer_call (peer, 1, &q, NULL), ==, 0);
        }

        fddir = g_strdup_printf ("/proc/%d/fdinfo", peer->pid);
        d = g_dir_open (fddir, 0, NULL);
        g_assert_nonnull (d);
        while ((name = g_dir_read_name (d))) {
                g_autofree char *path = g_build_filename (fddir, name, NULL);
                g_autofree char *info = NULL;
                const char *flags;
                unsigned long value;

                if (atoi (name) <= 2)
                        continue;
                g_assert_true (g_file_get_contents (path, &info, NULL, NULL));
                flags = strstr (info, "flags:");
                g_assert_nonnull (flags);
                value = strtoul (flags + 6, NULL, 8);
                g_test_message ("fd %s flags %lo", name, value);
                g_assert_cmphex (value & O_CLOEXEC, ==, O_CLOEXEC);
                checked++;
        }
        g_assert_cmpuint (checked, >=, 5); /* channel, share root, file, folder, control */
        fsd_peer_stop (peer);
}

/* F11. The reply queue is bounded per frame, not per read ------------------------------------- */

#define PIPELINED 400

static void
test_pipelined_replies_bounded (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RO);
        g_autoptr (GByteArray) burst = g_byte_array_new ();
        g_autofree char *big = g_malloc (FS_MAX_IO);
        g_autoptr (FsdPeer) peer = NULL;
        g_autofree char *path = NULL;
        uint64_t handle;
        guint64 hwm;

        memset (big, 'x', FS_MAX_IO);
        path = fs_client_host (c, "big");
        g_assert_true (g_file_set_contents (path, big, FS_MAX_IO, NULL));
        peer = start_on (c, "ro", NULL);
        handle = open_node (peer, lookup (peer, lookup (peer, FS_ROOT_NODE, "s"), "big"),
                            FS_O_RDONLY);

        /* 400 reads of 1 MiB in one write of a few KiB; no reply read until all are sent. */
        for (guint i = 0; i < PIPELINED; i++) {
                FsRequest q = { .op = FS_OP_READ, .handle = handle, .size = FS_MAX_IO };
                fsd_peer_encode (burst, 100 + i, &q);
        }
        g_test_message ("%u requests in %u bytes", PIPELINED, burst->len);
        fsd_peer_write (peer, burst->data, burst->len);

        /* Every reply arrives, in order and whole: nothing was dropped to keep the bound. */
        for (guint i = 0; i < PIPELINED; i++) {
                ProtoFrame f;
                FsReader r;

                fsd_peer_next (peer, &f);
                g_assert_cmpuint (f.channel, ==, 100 + i);
                fs_reader_init (&r, f.payload, f.length);
                g_assert_cmpuint (fs_read_u32 (&r), ==, 0);
                g_assert_cmpuint (f.length, ==, 4 + FS_MAX_IO);
        }
        /* The peak, not a moment: had the server read ahead of its queue, it would have held
         * the 400 MiB of replies at once. 8 MiB queue + buffers + the program itself. */
        hwm = fsd_peer_status_kib (peer, "VmHWM");
        g_test_message ("corral-fsd peak RSS: %" G_GUINT64_FORMAT " KiB", hwm);
        g_assert_cmpuint (hwm, <, 96 * 1024);
        fsd_peer_stop (peer);
}

/* FORGET cannot free a node an open handle uses (rule F11): the real server stays up and exits
 * cleanly. Before handle references were counted apart from lookups, the RELEASE here used the
 * freed node: the ASan build of corral-fsd reports it (the suite runs under ASan in tools/test);
 * /mount-server/forget-open-handle shows it in every build. */
static void
test_forget_open_handle (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        g_autoptr (FsdPeer) peer = NULL;
        g_autofree char *content = NULL;
        uint64_t file, handle;

        fs_client_host_write (c, "f", "old");
        peer = start_on (c, "rw", NULL);
        file = lookup (peer, lookup (peer, FS_ROOT_NODE, "s"), "f");
        handle = open_node (peer, file, FS_O_RDWR);
        {
                g_autoptr (GByteArray) forgets = g_byte_array_new ();
                FsRequest q = { .op = FS_OP_FORGET, .node = file, .nlookup = UINT64_MAX };
                fsd_peer_encode (forgets, 1, &q);
                q.node = SHARE_NODE;
                fsd_peer_encode (forgets, 1, &q);
                fsd_peer_write (peer, forgets->data, forgets->len);
        }
        {
                FsRequest q = { .op = FS_OP_WRITE,
                                .handle = handle,
                                .data = (const uint8_t *) "new",
                                .data_len = 3 };
                FsReader r;
                g_assert_cmpint (fsd_peer_call (peer, 2, &q, &r), ==, 0);
                g_assert_cmpuint (fs_read_u32 (&r), ==, 3);
        }
        {
                FsRequest q = { .op = FS_OP_RELEASE, .handle = handle };
                g_assert_cmpint (fsd_peer_call (peer, 3, &q, NULL), ==, 0);
                g_assert_cmpint (fsd_peer_call (peer, 4, &q, NULL), ==, -EBADF);
        }
        content = fs_client_host_read (c, "f");
        g_assert_cmpstr (content, ==, "new");
        /* Still serving: a fresh lookup of the forgotten names works. */
        lookup (peer, lookup (peer, FS_ROOT_NODE, "s"), "f");
        fsd_peer_stop (peer);
}

/* The guest's client restarted while the server kept running: it asks for a HELLO and gets a
 * fresh session (new nonce, the old client's nodes gone), at most one a second. */
static void
test_client_restart (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        g_autoptr (FsdPeer) peer = NULL;
        g_autoptr (GByteArray) ask = g_byte_array_new ();
        g_autofree uint8_t *buf = NULL;
        const char *nonce = NULL;
        char old_nonce[PROTO_NONCE_HEX_LEN + 1];
        uint64_t share;
        cJSON *obj = NULL;
        ProtoFrame f;
        size_t len;

        fs_client_host_write (c, "f", "x");
        peer = start_on (c, "rw", NULL);
        share = lookup (peer, FS_ROOT_NODE, "s");
        g_strlcpy (old_nonce, peer->nonce, sizeof old_nonce);
        obj = cJSON_CreateObject ();
        cJSON_AddNumberToObject (obj, "version", FS_PROTO_VERSION);
        cJSON_AddStringToObject (obj, "role", "fs-client");
        cJSON_AddStringToObject (obj, "request", "hello");
        g_assert_cmpint (proto_frame_build_json (PROTO_FRAME_HELLO, obj, &buf, &len), ==, 0);
        cJSON_Delete (obj);
        /* asked twice in a row: one new session */
        g_byte_array_append (ask, buf, (guint) len);
        g_byte_array_append (ask, buf, (guint) len);
        fsd_peer_write (peer, ask->data, ask->len);
        fsd_peer_next (peer, &f);
        g_assert_cmpint (f.type, ==, PROTO_FRAME_HELLO);
        g_assert_cmpint (proto_json_parse (f.payload, f.length, &obj), ==, 0);
        g_assert_cmpint (proto_json_get_string (obj, "nonce", 64, &nonce), ==, 0);
        g_assert_cmpstr (nonce, !=, old_nonce);
        cJSON_Delete (obj);
        fsd_peer_answer (peer, &f);
        /* the old session's nodes are gone; the share is found again */
        {
                FsRequest q = { .op = FS_OP_GETATTR, .node = share };
                alarm (20); /* a second HELLO would leave this unanswered */
                g_assert_cmpint (fsd_peer_call (peer, 7, &q, NULL), ==, -ESTALE);
                alarm (0);
        }
        lookup (peer, lookup (peer, FS_ROOT_NODE, "s"), "f");
        fsd_peer_stop (peer);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/mount-fsd/fds-cloexec", test_fds_cloexec);
        g_test_add_func ("/mount-fsd/pipelined-replies-bounded", test_pipelined_replies_bounded);
        g_test_add_func ("/mount-fsd/forget-open-handle", test_forget_open_handle);
        g_test_add_func ("/mount-fsd/client-restart", test_client_restart);
        return g_test_run ();
}
