/* bench-mounts.c — shared folders: Corral's file server (corral-fsd on the host, corral-fs in the
 * guest, over a virtio-serial port for requests and an ivshmem device for file contents, as
 * the VM manager sets them up) against virtiofsd (QEMU's, vhost-user) in the same VM, in
 * the same run, on the same host file system:
 *   1. sequential write of 256 MiB (dd, fsync at the end)
 *   2. sequential read of 256 MiB (guest caches dropped first)
 *   3. 2,000 small files: create, stat (ls -l), unlink (rm -r)
 *   4. git status in a 5,000-file repository (guest caches dropped first)
 * Each row prints both times and the ratio virtiofsd time / Corral time (>= 1: Corral is as
 * fast or faster; the goal is >= 0.5 on every row). Corral runs as every task's does, keeping
 * the change journal and the originals of changed files (fs-journal.h), and once more with
 * corral-fsd --no-keep (restarted between the two; the guest's corral-fs reconnects): the
 * journal's cost is journal / no journal (goal <= 1.10 on small files and git status). After
 * an untimed round through all three, they take turns for BENCH_ROUNDS timed rounds and each
 * time is the median of its rounds: on these machines one run of a row can be 40 % off the
 * next.
 *
 * The standard image is booted with plain QEMU (TCG), built first if it is not cached.
 * BENCH_MOUNTS_MIB overrides the 256 MiB.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-common.h"
#include "bench-vm-qemu.h"
#include "corral-image.h"
#include "corral-shm.h"

#define VIRTIOFSD "/usr/lib/qemu/virtiofsd"

static char *scratch; /* host temp dir: ours/, vfs/, sockets, overlay */

static void
on_image (GObject *source, GAsyncResult *res, gpointer user_data)
{
        *(GAsyncResult **) user_data = g_object_ref (res);
}

static CorralImage *
standard_image (void)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        CorralImage *image;

        corral_image_build_async ("standard", g_getenv ("CORRAL_AGENT_PATH"), NULL, NULL, NULL,
                                  on_image, &res);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        image = corral_image_build_finish (res, &error);
        if (!image)
                g_error ("the standard image: %s", error->message);
        return image;
}

static void
sh (const char *cmd)
{
        if (system (cmd) != 0)
                g_error ("host command failed: %s", cmd);
}

static void
child_dies_with_us (gpointer data)
{
        prctl (PR_SET_PDEATHSIG, SIGKILL);
}

static GPid
spawn (const char *const *argv)
{
        g_autoptr (GError) error = NULL;
        GPid pid;

        if (!g_spawn_async (NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
                            child_dies_with_us, NULL, &pid, &error))
                g_error ("%s: %s", argv[0], error->message);
        return pid;
}

/* The shared memory's first slot starts out filled with a marker; after the runs, anything
 * else there shows that file contents did travel through it (and not over the port). */
#define SHM_MARK 0xa5

/* Past the shared memory's header (which corral-fsd rewrites; FS_SHM_HEADER), one slot's
 * start. */
#define SHM_SLOTS_AT 4096
#define SHM_PROBE 65536

static void
mark_shm (const char *path)
{
        g_autofree char *buf = g_malloc (SHM_PROBE);
        int fd = open (path, O_WRONLY | O_CLOEXEC);

        /* Written in place: QEMU has the file mapped, so it is never truncated. */
        memset (buf, SHM_MARK, SHM_PROBE);
        if (fd < 0 || pwrite (fd, buf, SHM_PROBE, SHM_SLOTS_AT) != SHM_PROBE)
                g_error ("marking %s: %s", path, g_strerror (errno));
        close (fd);
}

static void
check_shm_used (const char *path)
{
        g_autofree char *buf = g_malloc (SHM_PROBE);
        int fd = open (path, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || pread (fd, buf, SHM_PROBE, SHM_SLOTS_AT) != SHM_PROBE)
                g_error ("reading %s: %s", path, g_strerror (errno));
        close (fd);
        /* Untouched: every byte still the marker (file contents that passed through may
         * happen to hold the marker byte here and there). */
        for (gsize i = 0; i < SHM_PROBE; i++)
                if ((guchar) buf[i] != SHM_MARK)
                        return;
        g_error ("the shared memory was never used: Corral's file contents "
                 "went through the port, so these figures are not what ships");
}

/* confined: under the agent's second wall (SECURITY.md A7, A8), as the assistant's commands
 * run. Mounting virtiofs needs it lifted, and its baseline rows (writes under /mnt) too. */
static double
timed (CorralAgentClient *client, BenchVm *vm, const char *cmd, gboolean confined)
{
        CorralExecSpec *spec = corral_exec_spec_new_shell (cmd);
        double t0;

        corral_exec_spec_set_user (spec, "root");
        corral_exec_spec_set_unconfined (spec, !confined);
        t0 = bench_now ();
        corral_run_result_free (bench_vm_run (client, vm, spec, 65536));
        corral_exec_spec_unref (spec);
        return bench_now () - t0;
}

/* Five: under TCG one round of a small row can be 20 % off the next, and the journal's goal is
 * a 10 % difference. */
#define BENCH_ROUNDS 5

static GPid fsd;
static gboolean fsd_keeps;
static char *fsd_sock, *fsd_shm, *fsd_share, *fsd_kept;

/* corral-fsd with the journal (keep) or --no-keep, the previous one stopped first; the guest's
 * corral-fs connects again. */
static void
start_fsd (CorralAgentClient *client, BenchVm *vm, gboolean keep)
{
        const char *argv[] = { g_getenv ("CORRAL_FSD_PATH"),
                               "--connect",
                               fsd_sock,
                               "--share",
                               fsd_share,
                               "--shm",
                               fsd_shm,
                               keep ? "--keep-dir" : "--no-keep",
                               keep ? fsd_kept : NULL,
                               NULL };
        int status = 0;

        if (fsd && fsd_keeps == keep)
                return;
        if (fsd) {
                kill (fsd, SIGTERM);
                waitpid (fsd, &status, 0);
                g_spawn_close_pid (fsd);
        }
        fsd = spawn (argv);
        fsd_keeps = keep;
        if (client)
                timed (client, vm,
                       "for i in $(seq 300); do test -d /workspace/b/repo && exit 0; "
                       "sleep 0.1; done; exit 1",
                       FALSE);
}

typedef struct {
        const char *name;
        double t[3]; /* [0] Corral, [1] virtiofsd, [2] Corral --no-keep: medians of the rounds */
        GArray *runs[3];
} Row;

static void
row_add (Row *row, int k, double t)
{
        if (!row->runs[k])
                row->runs[k] = g_array_new (FALSE, FALSE, sizeof (double));
        g_array_append_val (row->runs[k], t);
}

/* k: 0 Corral, 1 virtiofsd, 2 Corral without the journal */
static void
workloads (CorralAgentClient *client, BenchVm *vm, int k, guint mib, Row *rows)
{
        const char *dir = k == 1 ? "/mnt/vfs" : "/workspace/b";
        g_autofree char *write = g_strdup_printf (
                "dd if=/dev/zero of=%s/big bs=1M count=%u conv=fsync status=none", dir, mib);
        g_autofree char *read =
                g_strdup_printf ("dd if=%s/big of=/dev/null bs=1M status=none", dir);
        g_autofree char *small = g_strdup_printf (
                "cd %s && mkdir small && cd small && i=0 && while [ $i -lt 2000 ]; do "
                "echo x > f$i; i=$((i+1)); done && ls -l >/dev/null && cd .. && rm -r small",
                dir);
        g_autofree char *git = g_strdup_printf (
                "git -c safe.directory='*' -C %s/repo status --porcelain >/dev/null", dir);
        g_autofree char *rm = g_strdup_printf ("rm %s/big", dir);
        const char *drop = "sync && echo 3 > /proc/sys/vm/drop_caches";
        gboolean c = k != 1; /* Corral's rows run as the assistant's commands do */

        /* Each row starts from the same guest: nothing cached, memory free. */
        timed (client, vm, drop, c);
        row_add (&rows[0], k, timed (client, vm, write, c));
        timed (client, vm, drop, c);
        row_add (&rows[1], k, timed (client, vm, read, c));
        timed (client, vm, rm, c);
        timed (client, vm, drop, c);
        row_add (&rows[2], k, timed (client, vm, small, c));
        timed (client, vm, git, c); /* refreshes the index's stat data once */
        timed (client, vm, drop, c);
        row_add (&rows[3], k, timed (client, vm, git, c));
}

static void
round_of (CorralAgentClient *client, BenchVm *vm, int k, guint mib, Row *rows)
{
        if (k != 1)
                start_fsd (client, vm, k == 0);
        workloads (client, vm, k, mib, rows);
}

int
main (int argc, char **argv)
{
        g_autoptr (CorralImage) image = standard_image ();
        g_autoptr (GError) error = NULL;
        const char *mib_env = g_getenv ("BENCH_MOUNTS_MIB");
        guint mib = mib_env && atoi (mib_env) > 0 ? (guint) atoi (mib_env) : 256;
        g_autofree char *ours = NULL, *vfs = NULL, *fs_sock = NULL, *vfs_sock = NULL;
        g_autofree char *overlay = NULL, *cmd = NULL, *drive = NULL;
        g_autofree char *fs_dev = NULL, *fs_chardev = NULL, *vfs_chardev = NULL;
        g_autofree char *shm = NULL, *shm_object = NULL;
        g_autoptr (CorralAgentClient) client = NULL;
        Row rows[] = { { "write 256 MiB" },
                       { "read 256 MiB" },
                       { "2000 small files" },
                       { "git status, 5000 files" } };
        BenchVm vm;
        GPid vfsd;

        if (!g_file_test (VIRTIOFSD, G_FILE_TEST_IS_EXECUTABLE))
                g_error ("%s is missing (package qemu-system-x86)", VIRTIOFSD);
        scratch = g_dir_make_tmp ("corral-bench-mounts-XXXXXX", &error);
        g_assert_no_error (error);
        ours = g_build_filename (scratch, "ours", NULL);
        vfs = g_build_filename (scratch, "vfs", NULL);
        fs_sock = g_build_filename (scratch, "fs.sock", NULL);
        vfs_sock = g_build_filename (scratch, "vfs.sock", NULL);
        overlay = g_build_filename (scratch, "overlay.qcow2", NULL);

        /* One repository, copied to both folders. */
        g_print ("preparing a 5000-file repository...\n");
        cmd = g_strdup_printf ("set -e; mkdir -p %s/repo && cd %s/repo && git init -q && "
                               "for d in $(seq 0 49); do mkdir d$d; for f in $(seq 0 99); do "
                               "echo \"file $d $f\" > d$d/f$f.txt; done; done && git add -A && "
                               "git -c user.name=b -c user.email=b@example.com commit -qm init && "
                               "cp -a %s %s",
                               ours, ours, ours, vfs);
        sh (cmd);
        g_free (cmd);
        cmd = g_strdup_printf ("qemu-img create -q -f qcow2 -b %s -F qcow2 %s", image->disk,
                               overlay);
        sh (cmd);

        {
                g_autofree char *src = g_strdup_printf ("source=%s", vfs);
                g_autofree char *sock = g_strdup_printf ("--socket-path=%s", vfs_sock);
                const char *vargv[] = { VIRTIOFSD, sock, "-o", src, "-o", "cache=auto", NULL };
                vfsd = spawn (vargv);
        }
        for (int i = 0; i < 500 && !g_file_test (vfs_sock, G_FILE_TEST_EXISTS); i++)
                g_usleep (10000);

        drive = g_strdup_printf ("file=%s,if=virtio,format=qcow2", overlay);
        fs_chardev = g_strdup_printf ("socket,id=fs,path=%s,server=on,wait=off", fs_sock);
        fs_dev = g_strdup ("virtserialport,chardev=fs,name=org.corral.fs.0");
        vfs_chardev = g_strdup_printf ("socket,id=vfs,path=%s", vfs_sock);
        /* Corral's data plane, as the VM manager sets it up: an ivshmem-plain device. */
        shm = g_strdup_printf ("/dev/shm/corral-bench-mounts-%d", (int) getpid ());
        shm_object = g_strdup_printf ("memory-backend-file,id=fsshm,mem-path=%s,size=%uM,share=on",
                                      shm, CORRAL_FS_SHM_MIB);
        {
                const char *extra[] = {
                        "-drive",   drive,
                        "-chardev", fs_chardev,
                        "-device",  fs_dev,
                        "-chardev", vfs_chardev,
                        "-device",  "vhost-user-fs-pci,chardev=vfs,tag=vfs",
                        "-object",  shm_object,
                        "-device",  "ivshmem-plain,memdev=fsshm,master=on",
                        "-object",  "memory-backend-memfd,id=mem,size=512M,share=on,prealloc=on",
                        "-numa",    "node,memdev=mem",
                        NULL
                };
                bench_vm_start_full (&vm, image->kernel, image->initrd, image->cmdline, TRUE, FALSE,
                                     extra);
        }
        for (int i = 0; i < 500 && !g_file_test (fs_sock, G_FILE_TEST_EXISTS); i++)
                g_usleep (10000);
        for (int i = 0; i < 500 && !g_file_test (shm, G_FILE_TEST_EXISTS); i++)
                g_usleep (10000);
        mark_shm (shm);
        fsd_sock = fs_sock;
        fsd_shm = shm;
        fsd_share = g_strdup_printf ("b:rw:%s", ours);
        fsd_kept = g_build_filename (scratch, "kept", NULL);
        start_fsd (NULL, &vm, TRUE);
        g_print ("booting the standard image...\n");
        client = bench_vm_connect_agent (&vm);
        timed (client, &vm,
               "mkdir -p /mnt/vfs && mount -t virtiofs vfs /mnt/vfs && "
               "for i in $(seq 100); do test -d /workspace/b/repo && exit 0; sleep 0.1; done; "
               "exit 1",
               FALSE);

        /* A first, untimed round through both: memory that neither the guest nor this machine
         * has touched yet costs a fault the first time (much more so when this machine is
         * itself a VM), and that would fall on whichever path ran first. */
        g_print ("warm-up round...\n");
        for (int k = 0; k < 3; k++)
                round_of (client, &vm, k, mib, rows);
        for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
                for (int k = 0; k < 3; k++)
                        g_array_set_size (rows[i].runs[k], 0);
        for (int round = 1; round <= BENCH_ROUNDS; round++) {
                static const int order[][3] = { { 0, 1, 2 }, { 1, 2, 0 }, { 2, 0, 1 } };

                g_print ("timed round %d of %d...\n", round, BENCH_ROUNDS);
                /* Who goes first rotates, so none always follows another. */
                for (int i = 0; i < 3; i++)
                        round_of (client, &vm, order[(round - 1) % 3][i], mib, rows);
        }
        check_shm_used (shm);

        g_print ("\n%-24s %12s %12s %8s %14s %9s   %s\n", "shared folder", "Corral (s)",
                 "virtiofsd (s)", "ratio", "no journal (s)", "journal",
                 "rounds (Corral / virtiofsd / no journal)");
        for (guint i = 0; i < G_N_ELEMENTS (rows); i++) {
                g_autoptr (GString) runs = g_string_new (NULL);

                for (int k = 0; k < 3; k++) {
                        for (guint r = 0; r < rows[i].runs[k]->len; r++)
                                g_string_append_printf (runs, " %.2f",
                                                        g_array_index (rows[i].runs[k], double, r));
                        if (k < 2)
                                g_string_append (runs, " /");
                        rows[i].t[k] = bench_median (rows[i].runs[k]);
                }
                g_print ("%-24s %12.2f %12.2f %8.2f %14.2f %9.2f  %s\n", rows[i].name, rows[i].t[0],
                         rows[i].t[1], rows[i].t[1] / rows[i].t[0], rows[i].t[2],
                         rows[i].t[0] / rows[i].t[2], runs->str);
        }

        bench_vm_stop (&vm);
        kill (fsd, SIGTERM);
        kill (vfsd, SIGTERM);
        g_unlink (shm);
        g_spawn_close_pid (fsd);
        g_spawn_close_pid (vfsd);
        g_free (fsd_share);
        g_free (fsd_kept);
        g_free (cmd);
        cmd = g_strdup_printf ("rm -rf %s", scratch);
        sh (cmd);
        {
                double worst = 1e9, journal = 0;
                for (guint i = 0; i < G_N_ELEMENTS (rows); i++) {
                        worst = MIN (worst, rows[i].t[1] / rows[i].t[0]);
                        journal = MAX (journal, rows[i].t[0] / rows[i].t[2]);
                        for (int k = 0; k < 3; k++)
                                g_array_unref (rows[i].runs[k]);
                }
                g_print ("mounts: worst row %.2fx virtiofsd (goal >= 0.5)\n", worst);
                g_print ("mounts: the journal costs at most %.2fx (goal <= 1.10)\n", journal);
        }
        return 0;
}
