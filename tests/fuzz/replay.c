/* replay.c — runs a fuzz target over every file of its corpus folders, so the corpus is part of
 * the ordinary test suite (GLib's testing practice). Prints TAP.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <glib.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static int
replay_dir (const char *dir, guint *n)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GDir) d = g_dir_open (dir, 0, &error);
        const char *name;

        if (!d) {
                g_printerr ("cannot open corpus %s: %s\n", dir, error->message);
                return 1;
        }
        while ((name = g_dir_read_name (d)) != NULL) {
                g_autofree char *path = g_build_filename (dir, name, NULL);
                g_autofree char *data = NULL;
                gsize len;

                if (!g_file_get_contents (path, &data, &len, &error)) {
                        g_printerr ("%s\n", error->message);
                        return 1;
                }
                LLVMFuzzerTestOneInput ((const uint8_t *) data, len);
                g_print ("ok %u - %s\n", ++*n, name);
        }
        return 0;
}

int
main (int argc, char **argv)
{
        guint n = 0;

        for (int i = 1; i < argc; i++)
                if (replay_dir (argv[i], &n) != 0)
                        return 1;
        g_print ("1..%u\n", n);
        return n > 0 ? 0 : 1;
}
