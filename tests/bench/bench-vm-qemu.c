/* bench-vm-qemu.c — see bench-vm-qemu.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "bench-vm-qemu.h"

#include "bench-common.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <gio/gunixinputstream.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "bench-common.h"

/* The one running QEMU, for the signal handler and atexit. */
static volatile pid_t running_pid = 0;

static void
kill_running (void)
{
        pid_t pid = running_pid;

        if (pid > 0)
                kill (pid, SIGKILL);
}

static void
on_fatal_signal (int sig)
{
        kill_running ();
        signal (sig, SIG_DFL);
        raise (sig);
}

static void
install_handlers_once (void)
{
        static gboolean done;

        if (done)
                return;
        done = TRUE;
        atexit (kill_running);
        signal (SIGINT, on_fatal_signal);
        signal (SIGTERM, on_fatal_signal);
        signal (SIGHUP, on_fatal_signal);
        signal (SIGABRT, on_fatal_signal); /* g_error() */
        signal (SIGSEGV, on_fatal_signal);
}

static void
child_setup (gpointer user_data)
{
        /* If the benchmark dies in any way, QEMU goes with it. */
        prctl (PR_SET_PDEATHSIG, SIGKILL);
        if (getppid () != GPOINTER_TO_INT (user_data))
                _exit (1);
}

static gboolean
on_console (int fd, GIOCondition cond, gpointer user_data)
{
        BenchVm *vm = user_data;
        char buf[4096];
        ssize_t n = read (fd, buf, sizeof buf);

        if (n > 0) {
                g_string_append_len (vm->console, buf, n);
                if (vm->watch && !vm->watch_time && strstr (vm->console->str, vm->watch))
                        vm->watch_time = bench_now ();
                return G_SOURCE_CONTINUE;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return G_SOURCE_CONTINUE;
        vm->console_source = 0;
        return G_SOURCE_REMOVE; /* EOF: QEMU exited */
}

void
bench_vm_start (BenchVm *vm,
                const char *kernel,
                const char *initrd,
                const char *append,
                gboolean agent_port,
                gboolean qga_port)
{
        bench_vm_start_full (vm, kernel, initrd, append, agent_port, qga_port, NULL);
}

void
bench_vm_start_full (BenchVm *vm,
                     const char *kernel,
                     const char *initrd,
                     const char *append,
                     gboolean agent_port,
                     gboolean qga_port,
                     const char *const *extra)
{
        g_autoptr (GSubprocessLauncher) launcher = NULL;
        g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GError) error = NULL;
        GInputStream *out;
        int fd;

        g_assert (running_pid == 0); /* never more than one QEMU */
        install_handlers_once ();
        memset (vm, 0, sizeof *vm);
        vm->console = g_string_new (NULL);
        vm->dir = g_dir_make_tmp ("corral-bench-vm-XXXXXX", &error);
        if (!vm->dir)
                g_error ("temp dir: %s", error->message);

#define ARG(...) g_ptr_array_add (argv, g_strdup_printf (__VA_ARGS__))
        ARG ("qemu-system-x86_64");
        ARG ("-machine");
        ARG ("q35,accel=tcg");
        ARG ("-m");
        ARG ("512");
        ARG ("-smp");
        ARG ("2");
        ARG ("-nodefaults");
        ARG ("-no-user-config");
        ARG ("-display");
        ARG ("none");
        ARG ("-no-reboot");
        ARG ("-chardev");
        ARG ("stdio,id=con,signal=off");
        ARG ("-serial");
        ARG ("chardev:con");
        ARG ("-kernel");
        ARG ("%s", kernel);
        ARG ("-initrd");
        ARG ("%s", initrd);
        ARG ("-append");
        ARG ("%s", append);
        if (agent_port || qga_port) {
                ARG ("-device");
                ARG ("virtio-serial-pci");
        }
        if (agent_port) {
                vm->agent_sock = g_build_filename (vm->dir, "agent.sock", NULL);
                ARG ("-chardev");
                ARG ("socket,id=agent,path=%s,server=on,wait=off", vm->agent_sock);
                ARG ("-device");
                ARG ("virtserialport,chardev=agent,name=org.corral.agent.0");
        }
        if (qga_port) {
                vm->qga_sock = g_build_filename (vm->dir, "qga.sock", NULL);
                ARG ("-chardev");
                ARG ("socket,id=qga,path=%s,server=on,wait=off", vm->qga_sock);
                ARG ("-device");
                ARG ("virtserialport,chardev=qga,name=org.qemu.guest_agent.0");
        }
#undef ARG
        for (guint i = 0; extra && extra[i]; i++)
                g_ptr_array_add (argv, g_strdup (extra[i]));
        g_ptr_array_add (argv, NULL);

        launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                              G_SUBPROCESS_FLAGS_STDERR_MERGE);
        g_subprocess_launcher_set_child_setup (launcher, child_setup, GINT_TO_POINTER (getpid ()),
                                               NULL);
        vm->t_start = bench_now ();
        vm->proc =
                g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata, &error);
        if (!vm->proc)
                g_error ("starting qemu-system-x86_64: %s", error->message);
        running_pid = atoi (g_subprocess_get_identifier (vm->proc));
        out = g_subprocess_get_stdout_pipe (vm->proc);
        fd = g_unix_input_stream_get_fd (G_UNIX_INPUT_STREAM (out));
        g_unix_set_fd_nonblocking (fd, TRUE, NULL);
        vm->console_source = g_unix_fd_add (fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_console, vm);
}

double
bench_vm_wait_console (BenchVm *vm, const char *marker, double timeout_s)
{
        double deadline = bench_now () + timeout_s, t;
        GSource *tick = g_timeout_source_new (100); /* to check the deadline */

        g_source_set_dummy_callback (tick);
        g_source_attach (tick, NULL);
        for (;;) {
                if (strstr (vm->console->str, marker)) {
                        t = bench_now ();
                        break;
                }
                if (!vm->console_source || bench_now () > deadline) {
                        g_autofree char *tail =
                                g_strdup (vm->console->str +
                                          (vm->console->len > 2000 ? vm->console->len - 2000 : 0));
                        gboolean exited = !vm->console_source;

                        bench_vm_stop (vm);
                        g_error ("%s waiting for '%s'; console ends with:\n%s",
                                 exited ? "QEMU exited" : "timed out", marker, tail);
                }
                g_main_context_iteration (NULL, TRUE);
        }
        g_source_destroy (tick);
        g_source_unref (tick);
        return t;
}

void
bench_vm_stop (BenchVm *vm)
{
        if (vm->proc) {
                g_subprocess_force_exit (vm->proc);
                g_subprocess_wait (vm->proc, NULL, NULL);
                running_pid = 0;
                g_clear_object (&vm->proc);
        }
        g_clear_handle_id (&vm->console_source, g_source_remove);
        if (vm->agent_sock)
                g_unlink (vm->agent_sock);
        if (vm->qga_sock)
                g_unlink (vm->qga_sock);
        if (vm->dir)
                g_rmdir (vm->dir);
        g_clear_pointer (&vm->agent_sock, g_free);
        g_clear_pointer (&vm->qga_sock, g_free);
        g_clear_pointer (&vm->dir, g_free);
        if (vm->console)
                g_string_free (vm->console, TRUE);
        vm->console = NULL;
}

int
bench_vm_unix_connect (const char *path, double timeout_s)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        double deadline = bench_now () + timeout_s;

        g_assert (strlen (path) < sizeof addr.sun_path);
        strcpy (addr.sun_path, path);
        for (;;) {
                int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

                if (fd < 0)
                        g_error ("socket: %s", g_strerror (errno));
                if (connect (fd, (struct sockaddr *) &addr, sizeof addr) == 0)
                        return fd;
                close (fd);
                if (bench_now () > deadline)
                        return -1;
                g_usleep (2000);
        }
}

static void
cpio_entry (GString *s, const char *name, guint mode, const char *data, gsize len)
{
        gsize namesize = strlen (name) + 1;

        g_string_append_printf (s, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", 0u,
                                mode, 0u, 0u, 1u, 0u, (guint) len, 0u, 0u, 0u, 0u, (guint) namesize,
                                0u);
        g_string_append_len (s, name, namesize);
        while (s->len % 4)
                g_string_append_c (s, '\0');
        g_string_append_len (s, data, len);
        while (s->len % 4)
                g_string_append_c (s, '\0');
}

char *
bench_vm_marker_initrd (const char *initrd, const char *dir, const char *marker)
{
        g_autofree char *script = g_strdup_printf ("#!/bin/sh\necho %s\nexec sleep 600\n", marker);
        g_autofree char *contents = NULL;
        g_autoptr (GError) error = NULL;
        char *path = g_build_filename (dir, "initramfs-marker.img", NULL);
        GString *s;
        gsize len;

        if (!g_file_get_contents (initrd, &contents, &len, &error))
                g_error ("reading %s: %s", initrd, error->message);
        s = g_string_new_len (contents, len);
        /* The kernel takes concatenated archives; an uncompressed one must start 4-aligned
         * (zero bytes between archives are skipped). */
        while (s->len % 4)
                g_string_append_c (s, '\0');
        cpio_entry (s, "bench-init", 0100755, script, strlen (script));
        cpio_entry (s, "TRAILER!!!", 0, "", 0);
        if (!g_file_set_contents (path, s->str, s->len, &error))
                g_error ("writing %s: %s", path, error->message);
        g_string_free (s, TRUE);
        return path;
}

/* --- The Corral agent in the benchmark VM ---------------------------------------------------- */

typedef struct {
        gboolean done;
        GError *error;
        CorralRunResult *result;
} Wait;

static void
on_connected (GObject *source, GAsyncResult *res, gpointer user_data)
{
        Wait *w = user_data;

        corral_agent_client_connect_fd_finish (CORRAL_AGENT_CLIENT (source), res, &w->error);
        w->done = TRUE;
}

CorralAgentClient *
bench_vm_connect_agent (BenchVm *vm)
{
        CorralAgentClient *client = corral_agent_client_new ();

        /* The handshake may take HANDSHAKE_TIMEOUTS (4) heartbeat intervals: while the guest
         * boots (~5 s under TCG) allow more than the default 4 s. */
        corral_agent_client_set_heartbeat (client, 3000, 3);
        for (int attempt = 0;; attempt++) {
                int fd = bench_vm_unix_connect (vm->agent_sock, 60);
                Wait w = { 0 };

                if (fd < 0) {
                        bench_vm_stop (vm);
                        g_error ("cannot connect to %s", vm->agent_sock);
                }
                corral_agent_client_connect_fd_async (client, fd, NULL, on_connected, &w);
                bench_wait (&w.done);
                if (!w.error)
                        return client;
                if (attempt == 3) {
                        g_autofree char *console = g_strdup (vm->console->str);
                        bench_vm_stop (vm);
                        g_error ("agent handshake failed: %s; console:\n%s", w.error->message,
                                 console);
                }
                g_printerr ("agent handshake attempt %d failed (%s); retrying\n", attempt + 1,
                            w.error->message);
                g_error_free (w.error);
        }
}

static void
on_ran (GObject *source, GAsyncResult *res, gpointer user_data)
{
        Wait *w = user_data;

        w->result = corral_agent_client_run_finish (CORRAL_AGENT_CLIENT (source), res, &w->error);
        w->done = TRUE;
}

CorralRunResult *
bench_vm_run (CorralAgentClient *client, BenchVm *vm, CorralExecSpec *spec, gsize max_output)
{
        Wait w = { 0 };

        corral_agent_client_run_async (client, spec, max_output, NULL, on_ran, &w);
        bench_wait (&w.done);
        if (!w.result || w.result->exit_code != 0) {
                g_autofree char *err = NULL;
                if (w.result && w.result->stderr_data)
                        err = g_strndup (g_bytes_get_data (w.result->stderr_data, NULL),
                                         g_bytes_get_size (w.result->stderr_data));
                bench_vm_stop (vm);
                g_error ("exec in the guest failed: %s %s",
                         w.error ? w.error->message : "non-zero exit", err ? err : "");
        }
        return w.result;
}

/* build-minimal [--with-qemu-ga]: the image directory (cached builds take ~0.2 s). */
char *
bench_vm_minimal_image (gboolean with_qga)
{
        const char *env =
                g_getenv (with_qga ? "CORRAL_BENCH_VM_IMAGE_QGA" : "CORRAL_BENCH_VM_IMAGE");
        const char *src = g_getenv ("CORRAL_SOURCE_DIR"), *agent = g_getenv ("CORRAL_AGENT_PATH");
        g_autofree char *builder = NULL;
        g_autofree char *out = NULL;
        g_autoptr (GError) error = NULL;
        int status;

        if (env)
                return g_strdup (env);
        if (!src || !agent)
                g_error ("CORRAL_SOURCE_DIR / CORRAL_AGENT_PATH not set (run through meson test "
                         "--benchmark)");
        builder = g_build_filename (src, "guest-image", "minimal", "build-minimal", NULL);
        const char *argv[] = { builder, "--agent", agent, with_qga ? "--with-qemu-ga" : NULL,
                               NULL };
        if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_CHILD_INHERITS_STDIN, NULL, NULL,
                           &out, NULL, &status, &error) ||
            !g_spawn_check_wait_status (status, &error))
                g_error ("build-minimal failed: %s", error->message);
        return g_strdup (g_strstrip (out));
}
