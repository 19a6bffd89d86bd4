/* bench-computer.c — computer use: a screenshot through Corral's VNC client and the computer
 * tool (vmm/corral-vnc.c, app/computer/corral-computer.c) next to QEMU's own screendump, the
 * command libvirt's virDomainScreenshot runs, read back and encoded as the same PNG — on one
 * plain QEMU (TCG) with a virtio GPU, a USB tablet, VNC and QMP on unix sockets, booted from
 * the minimal image (its screen is the VGA text console: the desktop image comes later).
 *
 * The baseline leaves out what libvirt adds on top of screendump (its stream, a second process
 * hop), so the ratio is against the better of the two. Plain output; the last line is the
 * ratio (goal <= 0.5).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "bench-common.h"
#include "bench-vm-qemu.h"

#include <errno.h>
#include <gdk-pixbuf/gdk-pixbuf.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral-computer.h"
#include "corral-vnc.h"

#define APPEND "console=ttyS0 quiet panic=-1"
#define ROUNDS 30

/* QMP, blocking: one command, its "return" line (events before it are skipped). */
static void
qmp (int fd, FILE *in, const char *command)
{
        char line[4096];

        if (write (fd, command, strlen (command)) != (ssize_t) strlen (command))
                g_error ("QMP write: %s", g_strerror (errno));
        while (fgets (line, sizeof line, in)) {
                if (strstr (line, "\"return\""))
                        return;
                if (strstr (line, "\"error\""))
                        g_error ("QMP: %s", line);
        }
        g_error ("QMP closed");
}

/* A binary PPM (P6, maxval 255) as a pixbuf. */
static GdkPixbuf *
read_ppm (const char *path)
{
        g_autofree char *data = NULL;
        gsize len = 0;
        int w, h, max, n = 0;
        GdkPixbuf *pixbuf;

        if (!g_file_get_contents (path, &data, &len, NULL))
                g_error ("cannot read %s", path);
        if (sscanf (data, "P6 %d %d %d%n", &w, &h, &max, &n) != 3 || max != 255 || w < 1 || h < 1 ||
            (gsize) n + 1 + (gsize) w * h * 3 > len)
                g_error ("%s: not the PPM screendump writes", path);
        pixbuf = gdk_pixbuf_new (GDK_COLORSPACE_RGB, FALSE, 8, w, h);
        for (int y = 0; y < h; y++)
                memcpy (gdk_pixbuf_get_pixels (pixbuf) +
                                (gsize) y * gdk_pixbuf_get_rowstride (pixbuf),
                        data + n + 1 + (gsize) y * w * 3, (gsize) w * 3);
        return pixbuf;
}

static void
on_done (GObject *src, GAsyncResult *res, gpointer data)
{
        *(GAsyncResult **) data = g_object_ref (res);
}

int
main (void)
{
        g_autofree char *img = bench_vm_minimal_image (FALSE);
        g_autofree char *kernel = g_build_filename (img, "vmlinuz", NULL);
        g_autofree char *initrd = g_build_filename (img, "initramfs.img", NULL);
        g_autofree char *vnc_path = NULL, *qmp_path = NULL, *vnc_arg = NULL, *qmp_arg = NULL;
        g_autofree char *dump = NULL, *dump_cmd = NULL;
        g_autoptr (GArray) corral = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) baseline = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (CorralVnc) vnc = NULL;
        g_autoptr (CorralComputer) computer = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralAgentClient) client = NULL;
        g_autofree char *tmp = g_dir_make_tmp ("corral-bench-computer-XXXXXX", NULL);
        BenchVm vm;
        FILE *qmp_in;
        int qmp_fd;
        gsize png_bytes = 0, base_bytes = 0;
        double a, b;

        vnc_path = g_build_filename (tmp, "vnc.sock", NULL);
        qmp_path = g_build_filename (tmp, "qmp.sock", NULL);
        vnc_arg = g_strdup_printf ("unix:%s", vnc_path);
        qmp_arg = g_strdup_printf ("unix:%s,server=on,wait=off", qmp_path);
        {
                /* The devices Corral's domain XML gives a VM with a screen. */
                const char *const extra[] = { "-device", "virtio-vga", "-device", "qemu-xhci",
                                              "-device", "usb-tablet", "-vnc",    vnc_arg,
                                              "-qmp",    qmp_arg,      NULL };

                bench_vm_start_full (&vm, kernel, initrd, APPEND, TRUE, FALSE, extra);
        }
        /* Booted: the agent answers. */
        client = bench_vm_connect_agent (&vm);

        vnc = corral_vnc_new ();
        corral_vnc_connect_async (vnc, vnc_path, NULL, on_done, &res);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        if (!corral_vnc_connect_finish (vnc, res, &error))
                g_error ("VNC: %s", error->message);
        while (corral_vnc_get_update_count (vnc) == 0)
                g_main_context_iteration (NULL, TRUE);
        computer = corral_computer_new (vnc);

        qmp_fd = bench_vm_unix_connect (qmp_path, 10);
        if (qmp_fd < 0)
                g_error ("QMP socket did not answer");
        qmp_in = fdopen (dup (qmp_fd), "r");
        qmp (qmp_fd, qmp_in, "{\"execute\": \"qmp_capabilities\"}\n");
        dump = g_build_filename (tmp, "screen.ppm", NULL);
        dump_cmd = g_strdup_printf (
                "{\"execute\": \"screendump\", \"arguments\": {\"filename\": \"%s\"}}\n", dump);

        /* Untimed round of each, then turns. */
        for (int i = 0; i <= ROUNDS; i++) {
                double t0, t1, t2;
                g_autoptr (CorralComputerResult) shot = NULL;
                g_autoptr (GdkPixbuf) pixbuf = NULL;
                g_autoptr (GBytes) png = NULL;
                gsize size = 0;

                while (g_main_context_iteration (NULL, FALSE))
                        ;
                t0 = bench_now ();
                shot = corral_computer_screenshot (computer, &error);
                if (!shot)
                        g_error ("screenshot: %s", error->message);
                t1 = bench_now ();
                qmp (qmp_fd, qmp_in, dump_cmd);
                pixbuf = read_ppm (dump);
                /* The same encoder as Corral's screenshots. */
                png = corral_computer_encode_png (pixbuf, &error);
                if (!png)
                        g_error ("PNG: %s", error->message);
                size = g_bytes_get_size (png);
                t2 = bench_now ();
                if (i == 0) {
                        g_print ("screen %ux%u; Corral's screenshot %ux%u %s, %" G_GSIZE_FORMAT
                                 " bytes; screendump %dx%d\n",
                                 corral_vnc_get_width (vnc), corral_vnc_get_height (vnc),
                                 shot->image_width, shot->image_height, shot->mime_type,
                                 g_bytes_get_size (shot->image), gdk_pixbuf_get_width (pixbuf),
                                 gdk_pixbuf_get_height (pixbuf));
                        continue;
                }
                png_bytes = g_bytes_get_size (shot->image);
                base_bytes = size;
                {
                        double dc = t1 - t0, db = t2 - t1;

                        g_array_append_val (corral, dc);
                        g_array_append_val (baseline, db);
                }
        }
        fclose (qmp_in);
        close (qmp_fd);
        corral_vnc_close (vnc);
        g_clear_object (&client);
        bench_vm_stop (&vm);
        g_unlink (dump);
        g_rmdir (tmp);

        a = bench_median (corral);
        b = bench_median (baseline);
        g_print ("medians over %d: Corral (VNC copy, scale, PNG) %.2f ms, %" G_GSIZE_FORMAT
                 " bytes; QMP screendump + read + PNG %.2f ms, %" G_GSIZE_FORMAT " bytes\n",
                 ROUNDS, a * 1000, png_bytes, b * 1000, base_bytes);
        g_print ("computer-use screenshot: %.2f ms vs %.2f ms screendump + PNG, ratio %.2f "
                 "(goal <= 0.5)\n",
                 a * 1000, b * 1000, a / b);
        return 0;
}
