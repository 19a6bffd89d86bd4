/* bench-desktop.c — computer use on the desktop image (guest-image/desktop), through corralctl
 * for the VMs and Corral's own VNC client and computer tool for the screen, each figure beside
 * a baseline measured in the same run:
 *
 *   boot       `corralctl vm create --image desktop --screen` to desktop-ready, beside
 *              `corralctl vm create` of the minimal image (to its agent);
 *   settled    an action (a click that opens Mousepad's File menu, then Escape) to its settled
 *              screenshot, beside the reference demo's way: a fixed 2 s sleep, then a screenshot;
 *   key        a typed key to the first framebuffer update that shows it, beside noticing the
 *              same change by polling screenshots every 100 ms (a client without updates);
 *   view       the live view's pictures per second while the tool drags Mousepad's window
 *              (screen-changed emissions, one per main-loop turn at most), beside the updates
 *              QEMU sent in that time (what a view that drew every update would draw).
 *
 * Needs root (the desktop image is built with mmdebstrap) and QEMU; builds the image on first
 * use (minutes). Plain output; each row ends with its ratio.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "bench-common.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral-computer.h"
#include "corral-vnc.h"

#define ROUNDS 8
#define REFERENCE_SLEEP_S 2.0

static char *ctl;

/* corralctl ARGS..., output whole; aborts on failure. Returns the seconds it took. */
static double
run_ctl (char **out, const char *first, ...)
{
        g_autoptr (GPtrArray) argv = g_ptr_array_new ();
        g_autofree char *stdout_text = NULL, *stderr_text = NULL;
        g_autoptr (GError) error = NULL;
        int status = 0;
        double t0;
        va_list ap;

        g_ptr_array_add (argv, ctl);
        va_start (ap, first);
        for (const char *a = first; a; a = va_arg (ap, const char *))
                g_ptr_array_add (argv, (char *) a);
        va_end (ap);
        g_ptr_array_add (argv, NULL);
        t0 = bench_now ();
        if (!g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                           &stdout_text, &stderr_text, &status, &error) ||
            !g_spawn_check_wait_status (status, &error))
                g_error ("corralctl %s: %s\n%s%s", first, error->message, stdout_text, stderr_text);
        if (out)
                *out = g_steal_pointer (&stdout_text);
        return bench_now () - t0;
}

static void
on_done (GObject *src, GAsyncResult *res, gpointer data)
{
        *(GAsyncResult **) data = g_object_ref (res);
}

static CorralComputerResult *
act (CorralComputer *computer, const char *json)
{
        cJSON *input = cJSON_Parse (json);
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        CorralComputerResult *result;

        corral_computer_run_async (computer, input, NULL, on_done, &res);
        cJSON_Delete (input);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        result = corral_computer_run_finish (computer, res, &error);
        if (!result)
                g_error ("%s: %s", json, error->message);
        return result;
}

static void
spin (double seconds)
{
        double until = bench_now () + seconds;

        while (bench_now () < until) {
                while (g_main_context_iteration (NULL, FALSE))
                        ;
                g_usleep (2000);
        }
}

static guint view_frames;

static void
on_screen_changed (CorralVnc *vnc, guint x, guint y, guint w, guint h, gpointer data)
{
        view_frames++;
}

/* The screen's geometry "X Y W H" of the window named name, from xwininfo in the guest. */
static void
window_geometry (const char *vm, const char *name, int *x, int *y, int *w, int *h)
{
        for (int tries = 0; tries < 120; tries++) {
                g_autofree char *out = NULL;
                g_autofree char *cmd = g_strdup_printf (
                        "DISPLAY=:0 xwininfo -name '%s' 2>/dev/null | awk -F: '/Absolute "
                        "upper-left "
                        "X/{x=$2} /Absolute upper-left Y/{y=$2} /^ *Width/{w=$2} /^ *Height/{h=$2} "
                        "END{print x+0, y+0, w+0, h+0}'",
                        name);

                run_ctl (&out, "exec", vm, "--", "sh", "-c", cmd, NULL);
                if (sscanf (out, "%d %d %d %d", x, y, w, h) == 4 && *w > 100)
                        return;
                g_usleep (500000);
        }
        g_error ("no window named %s", name);
}

int
main (void)
{
        g_autofree char *state = g_dir_make_tmp ("corral-bench-desktop-XXXXXX", NULL);
        g_autofree char *sock = NULL;
        g_autoptr (CorralVnc) vnc = corral_vnc_new ();
        g_autoptr (CorralComputer) computer = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GArray) settled = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) reference = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) pushed = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) polled = g_array_new (FALSE, FALSE, sizeof (double));
        double boot_min, boot_desk, a, b;
        int mx, my, mw, mh;
        guint64 updates0;
        guint frames;
        double drag_s;
        g_autofree char *drag = NULL;

        if (!g_getenv ("CORRAL_BUILD_DIR"))
                g_error ("CORRAL_BUILD_DIR is not set (run through meson)");
        ctl = g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "app", "corralctl", NULL);
        g_setenv ("XDG_STATE_HOME", state, TRUE);

        /* The image first, untimed (built on first use). */
        run_ctl (NULL, "image", "build", "desktop", NULL);
        run_ctl (NULL, "image", "build", "minimal", NULL);
        boot_min = run_ctl (NULL, "vm", "create", "bmin", NULL);
        run_ctl (NULL, "vm", "destroy", "bmin", NULL);
        run_ctl (NULL, "vm", "rm", "bmin", NULL);
        boot_desk = run_ctl (NULL, "vm", "create", "--image", "desktop", "--screen", "bdesk", NULL);

        sock = g_build_filename (state, "corral", "vms", "bdesk", "vnc.sock", NULL);
        corral_vnc_connect_async (vnc, sock, NULL, on_done, &res);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        if (!corral_vnc_connect_finish (vnc, res, &error))
                g_error ("VNC: %s", error->message);
        computer = corral_computer_new (vnc);
        g_signal_connect (vnc, "screen-changed", G_CALLBACK (on_screen_changed), NULL);
        /* The desktop paints itself after it says it is ready: let it finish. */
        spin (15);

        run_ctl (NULL, "exec", "bdesk", "--", "sh", "-c",
                 "DISPLAY=:0 setsid mousepad </dev/null >/dev/null 2>&1 &", NULL);
        window_geometry ("bdesk", "Untitled 1 - Mousepad", &mx, &my, &mw, &mh);
        spin (3);

        /* An action to its settled screenshot, and the reference's fixed sleep. */
        for (int i = 0; i <= ROUNDS; i++) {
                g_autofree char *click = NULL;
                g_autoptr (CorralComputerResult) opened = NULL, closed = NULL, shot = NULL;
                CorralScreenScale scale;
                guint cx, cy;
                double t0, t1, t2;

                /* The click in the model's pixels. */
                corral_computer_get_scale (computer, &scale);
                corral_computer_scale_to_model (&scale, (guint) mx + 20, (guint) my + 12, &cx, &cy);
                click = g_strdup_printf ("{\"action\": \"left_click\", \"coordinate\": [%u, %u]}",
                                         cx, cy);
                t0 = bench_now ();
                opened = act (computer, click);
                t1 = bench_now ();
                closed = act (computer, "{\"action\": \"key\", \"text\": \"Escape\"}");
                t2 = bench_now ();
                g_usleep ((gulong) (REFERENCE_SLEEP_S * G_USEC_PER_SEC));
                shot = corral_computer_screenshot (computer, &error);
                if (!shot)
                        g_error ("screenshot: %s", error->message);
                if (i == 0)
                        continue;
                {
                        /* The reference: the fixed sleep, then the screenshot it takes. */
                        double ours = t1 - t0, theirs = bench_now () - t2;

                        g_array_append_val (settled, ours);
                        g_array_append_val (reference, theirs);
                }
        }

        /* A key to the first update that shows it; the same change found by polling. */
        corral_computer_result_free (act (computer, "{\"action\": \"key\", \"text\": \"Escape\"}"));
        {
                g_autofree char *click = NULL;
                CorralScreenScale scale;
                guint cx, cy;

                corral_computer_get_scale (computer, &scale);
                corral_computer_scale_to_model (&scale, (guint) (mx + mw / 2),
                                                (guint) (my + mh / 2), &cx, &cy);
                click = g_strdup_printf ("{\"action\": \"left_click\", \"coordinate\": [%u, %u]}",
                                         cx, cy);
                corral_computer_result_free (act (computer, click));
        }
        spin (1);
        for (int i = 0; i <= ROUNDS; i++) {
                guint64 before;
                double t0, push, poll;
                g_autoptr (CorralComputerResult) first = NULL;

                /* Pushed: the key goes, the next update is counted. */
                spin (0.5);
                before = corral_vnc_get_update_count (vnc);
                t0 = bench_now ();
                corral_vnc_key (vnc, 'x', 0x2d, TRUE);
                corral_vnc_key (vnc, 'x', 0x2d, FALSE);
                while (corral_vnc_get_update_count (vnc) == before && bench_now () - t0 < 10)
                        g_main_context_iteration (NULL, TRUE);
                push = bench_now () - t0;

                /* Polled: screenshots every 100 ms until one differs from the one before. */
                spin (0.5);
                first = corral_computer_screenshot (computer, &error);
                t0 = bench_now ();
                corral_vnc_key (vnc, 'x', 0x2d, TRUE);
                corral_vnc_key (vnc, 'x', 0x2d, FALSE);
                while (bench_now () - t0 < 10) {
                        g_autoptr (CorralComputerResult) now = NULL;

                        spin (0.1);
                        now = corral_computer_screenshot (computer, &error);
                        if (!g_bytes_equal (now->image, first->image))
                                break;
                }
                poll = bench_now () - t0;
                if (i == 0)
                        continue;
                g_array_append_val (pushed, push);
                g_array_append_val (polled, poll);
        }

        /* The live view while a window is dragged across the screen. */
        {
                CorralScreenScale scale;
                guint x0, y0, x1, y1;

                corral_computer_get_scale (computer, &scale);
                corral_computer_scale_to_model (&scale, (guint) (mx + mw / 2), (guint) (my - 15),
                                                &x0, &y0);
                corral_computer_scale_to_model (&scale, (guint) (mx + mw / 2 + 400),
                                                (guint) (my + 200), &x1, &y1);
                drag = g_strdup_printf ("{\"action\": \"left_click_drag\", \"start_coordinate\": "
                                        "[%u, %u], \"coordinate\": [%u, %u]}",
                                        x0, y0, x1, y1);
        }
        spin (1);
        view_frames = 0;
        updates0 = corral_vnc_get_update_count (vnc);
        {
                double t0 = bench_now ();

                corral_computer_result_free (act (computer, drag));
                drag_s = bench_now () - t0;
        }
        frames = view_frames;

        run_ctl (NULL, "vm", "destroy", "bdesk", NULL);
        run_ctl (NULL, "vm", "rm", "bdesk", NULL);

        g_print ("boot: desktop to desktop-ready %.1f s vs minimal %.1f s, ratio %.2f\n", boot_desk,
                 boot_min, boot_desk / boot_min);
        a = bench_median (settled);
        b = bench_median (reference);
        g_print ("settled: an action to its settled screenshot %.0f ms vs fixed 2 s + screenshot "
                 "%.0f ms, ratio %.2f (medians of %d)\n",
                 a * 1000, b * 1000, a / b, ROUNDS);
        a = bench_median (pushed);
        b = bench_median (polled);
        g_print ("key: a key to the first update %.0f ms vs polling screenshots every 100 ms "
                 "%.0f ms, ratio %.2f (medians of %d)\n",
                 a * 1000, b * 1000, a / b, ROUNDS);
        g_print ("view: %u pictures in %.2f s of dragging (%.1f/s) vs %" G_GUINT64_FORMAT
                 " updates from QEMU (%.1f/s), ratio %.2f\n",
                 frames, drag_s, frames / drag_s, corral_vnc_get_update_count (vnc) - updates0,
                 (corral_vnc_get_update_count (vnc) - updates0) / drag_s,
                 frames / (double) MAX (corral_vnc_get_update_count (vnc) - updates0, 1));
        corral_vnc_close (vnc);
        return 0;
}
