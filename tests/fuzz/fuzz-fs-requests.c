/* fuzz-fs-requests.c — libFuzzer target for the file server: request decoding and every op.
 *
 * The input is a sequence of requests, each a big-endian u16 length and that many payload
 * bytes, handed to a real FsServer sharing a small temp folder (files, folders, a symlink out,
 * a FIFO, a protected .git). After each input the server forgets the connection; every run
 * checks that the folder outside the share is untouched, so an escape aborts the fuzzer.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-server.h"
#include "proto.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static FsServer *server;
static char *outside_canary;
static uint8_t *reply;

static char *work_dir;

static void
remove_work_dir (void)
{
        const char *argv[] = { "rm", "-rf", work_dir, NULL };

        /* What the fuzzed requests created there, too: nothing stays behind in /tmp. */
        g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL,
                      NULL);
}

static void
setup (void)
{
        const char *dir = work_dir = g_dir_make_tmp ("corral-fuzz-fs-XXXXXX", NULL);
        g_autofree char *share = g_build_filename (dir, "share", NULL);
        g_autofree char *outside = g_build_filename (dir, "outside", NULL);
        g_autofree char *p = NULL;

        g_mkdir (share, 0755);
        g_mkdir (outside, 0755);
        outside_canary = g_build_filename (outside, "canary", NULL);
        g_file_set_contents (outside_canary, "canary", -1, NULL);
        p = g_build_filename (share, "file", NULL);
        g_file_set_contents (p, "hello", -1, NULL);
        g_free (p);
        p = g_build_filename (share, "d", NULL);
        g_mkdir (p, 0755);
        g_free (p);
        p = g_build_filename (share, "out", NULL);
        (void) !symlink ("../outside", p);
        g_free (p);
        p = g_build_filename (share, "fifo", NULL);
        mkfifo (p, 0644);
        g_free (p);
        p = g_build_filename (share, ".git", NULL);
        g_mkdir (p, 0755);
        g_free (p);
        p = g_build_filename (share, ".git", "config", NULL);
        g_file_set_contents (p, "[core]", -1, NULL);

        atexit (remove_work_dir);
        server = fs_server_new (NULL, NULL);
        fs_server_add_share (server, "s", share, FS_MODE_RW, NULL, NULL);
        reply = malloc (PROTO_MAX_PAYLOAD);
}

static void
check_outside (void)
{
        g_autofree char *text = NULL;
        g_autofree char *dir = g_path_get_dirname (outside_canary);
        g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
        guint n = 0;

        if (!g_file_get_contents (outside_canary, &text, NULL, NULL) ||
            strcmp (text, "canary") != 0)
                abort ();
        while (d && g_dir_read_name (d))
                n++;
        if (n != 1)
                abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        if (!server)
                setup ();

        while (size >= 2) {
                size_t len = ((size_t) data[0] << 8) | data[1];
                FsWriter w;

                data += 2;
                size -= 2;
                if (len > size)
                        len = size;
                fs_writer_init (&w, reply, PROTO_MAX_PAYLOAD);
                if (fs_server_handle (server, data, len, &w) && (w.overflow || w.len < 4))
                        abort (); /* every reply is well formed */
                data += len;
                size -= len;
        }
        fs_server_reset (server);
        check_outside ();
        return 0;
}
