/* bench-journal.c — what the change journal (fs-journal.h) costs: the same shared folder served
 * by two corral-fsd in the same run, one keeping the journal and the originals of changed
 * files (as every task's does) and one with --no-keep, each with its corral-fs mounted on this
 * machine (mount-harness.h; no VM, so that the file server's own work is what differs):
 *   1. 1,000 small files: create and write, stat, remove
 *   2. git status in a 5,000-file repository (the index is rewritten: its original is kept)
 *   3. the first overwrite of a 32 MiB file that existed (its original is copied first)
 *   4. an editor's save of a 1 MiB file, 50 times over (kept once, then noted)
 * Each row prints both times and journal / no journal (goal: at most 1.10 for rows 1, 2 and 4,
 * at most 2 for row 3). The two take turns for BENCH_ROUNDS rounds (default 5), each time the
 * median. Copies are made with a reflink where the file system has them; whether this one
 * does is printed (ext4 has none: row 3 then copies every byte).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench-common.h"
#include "mount-harness.h"

#define BIG_MIB 32

typedef struct {
        const char *name;
        double goal;
        GArray *runs[2]; /* 0: journal, 1: none */
} Row;

typedef struct {
        MountHarness *h;
        char *host; /* the shared folder */
        char *mnt; /* it, mounted */
} Side;

static void
run (const char *cwd, const char *const *argv)
{
        g_autoptr (GError) error = NULL;

        if (!mount_harness_run (cwd, argv, NULL, &error))
                g_error ("%s: %s", argv[0], error->message);
}

static void
write_file (const char *path, int flags, gsize len)
{
        static char block[1 << 20];
        int fd = open (path, O_WRONLY | O_CLOEXEC | flags, 0644);

        if (fd < 0)
                g_error ("%s: %s", path, g_strerror (errno));
        for (gsize done = 0; done < len;) {
                gsize n = MIN (len - done, sizeof block);
                if (write (fd, block, n) != (ssize_t) n)
                        g_error ("%s: %s", path, g_strerror (errno));
                done += n;
        }
        if (fsync (fd) < 0 || close (fd) < 0)
                g_error ("%s: %s", path, g_strerror (errno));
}

static double
small_files (Side *s, guint round)
{
        g_autofree char *dir = g_strdup_printf ("%s/small%u", s->mnt, round);
        double t0 = bench_now ();

        g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
        for (guint i = 0; i < 1000; i++) {
                g_autofree char *p = g_strdup_printf ("%s/f%u", dir, i);
                int fd = open (p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                g_assert_cmpint (fd, >=, 0);
                g_assert_cmpint (write (fd, "0123456789abcdef0123456789abcdef", 32), ==, 32);
                g_assert_cmpint (close (fd), ==, 0);
        }
        for (guint i = 0; i < 1000; i++) {
                g_autofree char *p = g_strdup_printf ("%s/f%u", dir, i);
                struct stat st;
                g_assert_cmpint (lstat (p, &st), ==, 0);
        }
        for (guint i = 0; i < 1000; i++) {
                g_autofree char *p = g_strdup_printf ("%s/f%u", dir, i);
                g_assert_cmpint (g_unlink (p), ==, 0);
        }
        g_assert_cmpint (g_rmdir (dir), ==, 0);
        return bench_now () - t0;
}

static double
git_status (Side *s, guint round)
{
        g_autofree char *repo = g_build_filename (s->mnt, "repo", NULL);
        g_autofree char *touched = g_strdup_printf ("%s/d%u/f0", repo, round % 50);
        const char *argv[] = { "git", "status", "--porcelain", NULL };
        double t0;

        /* A file's time changed, so that git rewrites its index (a change the journal keeps). */
        g_assert_cmpint (utimes (touched, NULL), ==, 0);
        t0 = bench_now ();
        run (repo, argv);
        return bench_now () - t0;
}

static double
first_overwrite (Side *s, guint round)
{
        g_autofree char *host = g_strdup_printf ("%s/big%u", s->host, round);
        g_autofree char *mnt = g_strdup_printf ("%s/big%u", s->mnt, round);
        double t, t0;

        /* The person's file, there before the task. */
        write_file (host, O_CREAT | O_TRUNC, (gsize) BIG_MIB << 20);
        t0 = bench_now ();
        write_file (mnt, O_TRUNC, (gsize) BIG_MIB << 20);
        t = bench_now () - t0;
        g_assert_cmpint (g_unlink (mnt), ==, 0);
        return t;
}

static double
editor_saves (Side *s, guint round)
{
        g_autofree char *host = g_strdup_printf ("%s/doc%u", s->host, round);
        g_autofree char *mnt = g_strdup_printf ("%s/doc%u", s->mnt, round);
        g_autofree char *tmp = g_strdup_printf ("%s/.doc%u.swp", s->mnt, round);
        double t0;

        write_file (host, O_CREAT | O_TRUNC, 1 << 20);
        t0 = bench_now ();
        for (guint i = 0; i < 50; i++) {
                write_file (tmp, O_CREAT | O_TRUNC, 1 << 20);
                g_assert_cmpint (g_rename (tmp, mnt), ==, 0);
        }
        return bench_now () - t0;
}

/* A repository of 5,000 files in 50 folders, committed. */
static void
make_repo (const char *folder)
{
        g_autofree char *repo = g_build_filename (folder, "repo", NULL);
        const char *init[] = { "git", "init", "-q", NULL };
        const char *add[] = { "git", "add", "-A", NULL };
        const char *commit[] = { "git",    "-c", "user.name=b", "-c", "user.email=b@b",
                                 "commit", "-q", "-m",          "b",  NULL };

        g_assert_cmpint (g_mkdir (repo, 0755), ==, 0);
        for (guint d = 0; d < 50; d++) {
                g_autofree char *dir = g_strdup_printf ("%s/d%u", repo, d);
                g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
                for (guint f = 0; f < 100; f++) {
                        g_autofree char *p = g_strdup_printf ("%s/f%u", dir, f);
                        g_autofree char *text = g_strdup_printf ("file %u/%u\n", d, f);
                        g_assert_true (g_file_set_contents (p, text, -1, NULL));
                }
        }
        run (repo, init);
        run (repo, add);
        run (repo, commit);
}

static void
side_start (Side *s, const char *scratch, const char *name, gboolean journal)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *spec = NULL;
        const char *no_keep[] = { "--no-keep", NULL };

        s->host = g_build_filename (scratch, name, NULL);
        g_assert_cmpint (g_mkdir (s->host, 0755), ==, 0);
        make_repo (s->host);
        spec = g_strdup_printf ("b:rw:%s", s->host);
        s->h = mount_harness_new_full ((const char *const[]){ spec, NULL },
                                       journal ? NULL : no_keep, NULL, &error);
        if (!s->h)
                g_error ("mount: %s", error->message);
        s->mnt = mount_harness_path (s->h, "b", NULL);
}

/* Whether the file system of dir makes reflinks. */
static gboolean
has_reflinks (const char *dir)
{
        g_autofree char *a = g_build_filename (dir, "reflink-a", NULL);
        g_autofree char *b = g_build_filename (dir, "reflink-b", NULL);
        int fa, fb;
        gboolean ok;

        write_file (a, O_CREAT | O_TRUNC, 4096);
        fa = open (a, O_RDONLY | O_CLOEXEC);
        fb = open (b, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ok = fa >= 0 && fb >= 0 && ioctl (fb, FICLONE, fa) == 0;
        close (fa);
        close (fb);
        g_unlink (a);
        g_unlink (b);
        return ok;
}

int
main (void)
{
        const char *rounds_env = g_getenv ("BENCH_ROUNDS");
        guint rounds = rounds_env ? (guint) atoi (rounds_env) : 5;
        g_autofree char *scratch = g_dir_make_tmp ("corral-bench-journal-XXXXXX", NULL);
        Row rows[] = {
                { "1000 small files", 1.10, { NULL } },
                { "git status, 5000 files", 1.10, { NULL } },
                { "first overwrite 32 MiB", 2.0, { NULL } },
                { "50 saves of 1 MiB", 1.10, { NULL } },
        };
        double (*work[]) (Side *, guint) = { small_files, git_status, first_overwrite,
                                             editor_saves };
        Side sides[2] = { { 0 } };
        double worst_goal = 0;
        const char *rm[] = { "rm", "-rf", scratch, NULL };

        if (!g_getenv ("CORRAL_FSD_PATH") || !g_getenv ("CORRAL_FS_PATH")) {
                g_print ("journal: needs CORRAL_FSD_PATH and CORRAL_FS_PATH (meson test "
                         "--benchmark sets them)\n");
                return 77;
        }
        g_print ("setting up two shares with a 5000-file repository each...\n");
        side_start (&sides[0], scratch, "journal", TRUE);
        side_start (&sides[1], scratch, "none", FALSE);
        g_print ("reflinks on %s: %s\n", scratch,
                 has_reflinks (scratch) ? "yes (copies share blocks)"
                                        : "no (every kept byte is copied; no file system "
                                          "here offers them)");
        for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
                for (int k = 0; k < 2; k++)
                        rows[i].runs[k] = g_array_new (FALSE, FALSE, sizeof (double));
        /* Untimed first round (page cache, git's first index refresh), then turns. */
        for (int k = 0; k < 2; k++)
                for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
                        work[i](&sides[k], 1000 + i);
        for (guint round = 1; round <= rounds; round++) {
                g_print ("timed round %u of %u...\n", round, rounds);
                for (int turn = 0; turn < 2; turn++) {
                        int k = (int) (round + (guint) turn) % 2;
                        for (guint i = 0; i < G_N_ELEMENTS (rows); i++) {
                                double t = work[i](&sides[k], round);
                                g_array_append_val (rows[i].runs[k], t);
                        }
                }
        }
        g_print ("\n%-24s %12s %12s %8s %6s\n", "shared folder", "journal (s)", "none (s)", "ratio",
                 "goal");
        for (guint i = 0; i < G_N_ELEMENTS (rows); i++) {
                double on = bench_median (rows[i].runs[0]), off = bench_median (rows[i].runs[1]);
                g_print ("%-24s %12.3f %12.3f %8.2f %6.2f\n", rows[i].name, on, off, on / off,
                         rows[i].goal);
                worst_goal = MAX (worst_goal, (on / off) / rows[i].goal);
                g_array_unref (rows[i].runs[0]);
                g_array_unref (rows[i].runs[1]);
        }
        for (int k = 0; k < 2; k++) {
                mount_harness_free (sides[k].h);
                g_free (sides[k].host);
                g_free (sides[k].mnt);
        }
        run (NULL, rm);
        g_print ("journal: worst row at %.2f of its goal (<= 1.00 meets every goal)\n", worst_goal);
        return 0;
}
