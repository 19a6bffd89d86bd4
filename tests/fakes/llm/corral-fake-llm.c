/* corral-fake-llm — the scripted fake LLM provider as a process, for CLI and UI tests.
 *
 *   corral-fake-llm --script FILE [--record FILE] [--port N]
 *
 * Serves the replies of FILE ({"replies": [...]}, see README.md) in order on 127.0.0.1,
 * prints "listening on port N" on stdout once it accepts connections, appends each request it
 * receives as one JSON line to the --record file, and runs until SIGTERM or SIGINT.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fake-llm-server.h"

#include <glib-unix.h>
#include <stdio.h>

static void
record_line (const cJSON *record, gpointer data)
{
        FILE *out = data;
        char *line = cJSON_PrintUnformatted (record);

        fprintf (out, "%s\n", line);
        fflush (out);
        cJSON_free (line);
}

static gboolean
on_signal (gpointer data)
{
        g_main_loop_quit (data);
        return G_SOURCE_CONTINUE;
}

static int
run (const char *script_path, const char *record_path, int port)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralFakeLlmServer) server = NULL;
        g_autoptr (GMainLoop) loop = g_main_loop_new (NULL, FALSE);
        g_autofree char *script = NULL;
        gsize len;
        FILE *record = NULL;

        if (!g_file_get_contents (script_path, &script, &len, &error)) {
                g_printerr ("corral-fake-llm: %s\n", error->message);
                return 1;
        }
        server = corral_fake_llm_server_new ((guint) port, &error);
        if (server == NULL || !corral_fake_llm_server_load_script (server, script, len, &error)) {
                g_printerr ("corral-fake-llm: %s: %s\n", script_path, error->message);
                return 1;
        }
        if (record_path != NULL) {
                record = fopen (record_path, "ae");
                if (record == NULL) {
                        g_printerr ("corral-fake-llm: cannot open %s\n", record_path);
                        return 1;
                }
                corral_fake_llm_server_set_record_func (server, record_line, record);
        }
        g_unix_signal_add (SIGTERM, on_signal, loop);
        g_unix_signal_add (SIGINT, on_signal, loop);
        g_print ("listening on port %u\n", corral_fake_llm_server_get_port (server));
        fflush (stdout);
        g_main_loop_run (loop);
        g_clear_pointer (&server, corral_fake_llm_server_free);
        if (record != NULL)
                fclose (record);
        return 0;
}

int
main (int argc, char **argv)
{
        g_autofree char *script = NULL, *record = NULL;
        int port = 0;
        GOptionEntry entries[] = {
                { "script", 0, 0, G_OPTION_ARG_FILENAME, &script, "Replies to serve", "FILE" },
                { "record", 0, 0, G_OPTION_ARG_FILENAME, &record, "Append requests here", "FILE" },
                { "port", 0, 0, G_OPTION_ARG_INT, &port, "Port (default: any free one)", "N" },
                { NULL },
        };
        g_autoptr (GOptionContext) ctx = g_option_context_new ("- scripted fake LLM provider");
        g_autoptr (GError) error = NULL;

        g_option_context_add_main_entries (ctx, entries, NULL);
        if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
                g_printerr ("corral-fake-llm: %s\n", error->message);
                return 2;
        }
        if (script == NULL || port < 0 || port > 65535) {
                g_printerr ("corral-fake-llm: --script FILE is required\n");
                return 2;
        }
        return run (script, record, port);
}
