/* corral-computer-compose.c — see corral-computer-compose.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-computer-compose.h"

#include <string.h>
#include <xkbcommon/xkbcommon.h>

#include "corral-computer-keys.h"

#define COMPOSE_FILE "/usr/share/X11/locale/en_US.UTF-8/Compose"
/* The file is about 300 KiB; more is not X's table. */
#define COMPOSE_FILE_MAX ((gsize) 4 * 1024 * 1024)

typedef struct {
        guint32 keysyms[CORRAL_COMPUTER_COMPOSE_MAX];
        guint n;
} Sequence;

/* One line: "<Multi_key> <apostrophe> <e> : "é" eacute # comment". The sequence is kept for
 * its character when every key after Multi_key is on the US keyboard and none shorter is
 * known. */
static void
parse_line (const char *line, GHashTable *table)
{
        Sequence seq = { { 0 }, 0 };
        const char *p = line;
        const char *end;
        g_autofree char *result = NULL;
        gunichar c;
        Sequence *known;

        while (*p == ' ' || *p == '\t')
                p++;
        if (!g_str_has_prefix (p, "<Multi_key>"))
                return;
        p += strlen ("<Multi_key>");
        while (TRUE) {
                g_autofree char *name = NULL;
                guint32 sym;
                guint scancode;
                gboolean shift;

                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p != '<')
                        break;
                if (!(end = strchr (p, '>')) || seq.n == CORRAL_COMPUTER_COMPOSE_MAX)
                        return;
                name = g_strndup (p + 1, end - p - 1);
                sym = xkb_keysym_from_name (name, XKB_KEYSYM_NO_FLAGS);
                if (sym == XKB_KEY_NoSymbol ||
                    !corral_computer_key_position (sym, &scancode, &shift))
                        return;
                seq.keysyms[seq.n++] = sym;
                p = end + 1;
        }
        if (seq.n == 0 || *p != ':')
                return;
        p++;
        while (*p == ' ' || *p == '\t')
                p++;
        if (*p != '"' || !(end = strchr (p + 1, '"')))
                return;
        result = g_strndup (p + 1, end - p - 1);
        /* One plain character: no escapes, valid UTF-8. */
        if (strchr (result, '\\') || !g_utf8_validate (result, -1, NULL) ||
            g_utf8_strlen (result, -1) != 1)
                return;
        c = g_utf8_get_char (result);
        known = g_hash_table_lookup (table, GUINT_TO_POINTER (c));
        if (known && known->n <= seq.n)
                return;
        g_hash_table_insert (table, GUINT_TO_POINTER (c), g_memdup2 (&seq, sizeof seq));
}

static GHashTable *
parse (const char *text)
{
        GHashTable *table = g_hash_table_new_full (NULL, NULL, NULL, g_free);
        g_auto (GStrv) lines = g_strsplit (text, "\n", -1);

        for (guint i = 0; lines[i]; i++)
                parse_line (lines[i], table);
        return table;
}

static gboolean
lookup (GHashTable *table, gunichar c, guint32 *keysyms, guint *n)
{
        const Sequence *seq = table ? g_hash_table_lookup (table, GUINT_TO_POINTER (c)) : NULL;

        if (!seq)
                return FALSE;
        memcpy (keysyms, seq->keysyms, sizeof seq->keysyms);
        *n = seq->n;
        return TRUE;
}

static gpointer
load (gpointer data)
{
        g_autofree char *text = NULL;
        gsize len = 0;

        if (!g_file_get_contents (COMPOSE_FILE, &text, &len, NULL) || len > COMPOSE_FILE_MAX) {
                g_debug ("no Compose table at %s: characters without a key are typed as GTK's "
                         "Unicode input",
                         COMPOSE_FILE);
                return NULL;
        }
        return parse (text);
}

gboolean
corral_computer_compose_sequence (gunichar c,
                                  guint32 keysyms[CORRAL_COMPUTER_COMPOSE_MAX],
                                  guint *n)
{
        static GOnce once = G_ONCE_INIT;

        return lookup (g_once (&once, load, NULL), c, keysyms, n);
}

gboolean
corral_computer_compose_sequence_in (const char *text,
                                     gunichar c,
                                     guint32 keysyms[CORRAL_COMPUTER_COMPOSE_MAX],
                                     guint *n)
{
        g_autoptr (GHashTable) table = parse (text);

        return lookup (table, c, keysyms, n);
}
