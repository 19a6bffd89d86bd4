/* test-computer.c — the computer tool's key names, typed text and screenshot scale
 * (app/computer).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <gio/gio.h>
#include <string.h>
#include <xkbcommon/xkbcommon.h>

#include "corral-computer-compose.h"
#include "corral-computer-keys.h"
#include "corral-computer-screen.h"

static const CorralKeyCombo *
combo_at (GArray *combos, guint i)
{
        return &g_array_index (combos, CorralKeyCombo, i);
}

static void
assert_combo (const char *text, const guint32 *want, guint n)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GArray) combos = corral_computer_parse_keys (text, &error);

        g_test_message ("%s", text);
        g_assert_no_error (error);
        g_assert_cmpuint (combos->len, ==, 1);
        g_assert_cmpuint (combo_at (combos, 0)->n, ==, n);
        for (guint i = 0; i < n; i++)
                g_assert_cmphex (combo_at (combos, 0)->keysyms[i], ==, want[i]);
}

static void
test_keys_names (void)
{
        assert_combo ("ctrl+s", (guint32[]){ XKB_KEY_Control_L, XKB_KEY_s }, 2);
        assert_combo ("CTRL+S", (guint32[]){ XKB_KEY_Control_L, XKB_KEY_S }, 2);
        assert_combo ("Return", (guint32[]){ XKB_KEY_Return }, 1);
        assert_combo ("return", (guint32[]){ XKB_KEY_Return }, 1);
        assert_combo ("enter", (guint32[]){ XKB_KEY_Return }, 1);
        assert_combo ("KP_Enter", (guint32[]){ XKB_KEY_KP_Enter }, 1);
        assert_combo ("ctrl+shift+t", (guint32[]){ XKB_KEY_Control_L, XKB_KEY_Shift_L, XKB_KEY_t },
                      3);
        assert_combo ("alt+F4", (guint32[]){ XKB_KEY_Alt_L, XKB_KEY_F4 }, 2);
        assert_combo ("f5", (guint32[]){ XKB_KEY_F5 }, 1);
        assert_combo ("Page_Down", (guint32[]){ XKB_KEY_Next }, 1);
        assert_combo ("pgup", (guint32[]){ XKB_KEY_Prior }, 1);
        assert_combo ("super", (guint32[]){ XKB_KEY_Super_L }, 1);
        assert_combo ("cmd+c", (guint32[]){ XKB_KEY_Super_L, XKB_KEY_c }, 2);
        assert_combo ("BackSpace", (guint32[]){ XKB_KEY_BackSpace }, 1);
        assert_combo ("ctrl++", (guint32[]){ XKB_KEY_Control_L, XKB_KEY_plus }, 2);
        assert_combo ("+", (guint32[]){ XKB_KEY_plus }, 1);
        assert_combo ("ctrl+plus", (guint32[]){ XKB_KEY_Control_L, XKB_KEY_plus }, 2);
        assert_combo ("@", (guint32[]){ XKB_KEY_at }, 1);
        assert_combo ("é", (guint32[]){ XKB_KEY_eacute }, 1);
        assert_combo ("shift+Tab", (guint32[]){ XKB_KEY_Shift_L, XKB_KEY_Tab }, 2);
}

static void
test_keys_sequence (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GArray) combos = corral_computer_parse_keys ("  ctrl+a  ctrl+c Delete ", &error);

        g_assert_no_error (error);
        g_assert_cmpuint (combos->len, ==, 3);
        g_assert_cmpuint (combo_at (combos, 0)->n, ==, 2);
        g_assert_cmphex (combo_at (combos, 1)->keysyms[1], ==, XKB_KEY_c);
        g_assert_cmphex (combo_at (combos, 2)->keysyms[0], ==, XKB_KEY_Delete);
}

static void
test_keys_refused (void)
{
        g_autofree char *long_text = g_strnfill (CORRAL_COMPUTER_KEYS_TEXT_MAX + 1, 'a');
        g_autoptr (GString) many = g_string_new (NULL);
        static const struct {
                const char *text;
                const char *said;
        } bad[] = {
                { "", "No keys" },
                { "   ", "No keys" },
                { "ctrl+", "ends with" },
                { "ctrl+nosuchkey", "“nosuchkey” is not a key name" },
                { "0x41", "is not a key name" },
                { "U0041", "is not a key name" },
                { "ctrl+\x1b", "is not a key name" },
                { "a+b+c+d+e+f+g+h+i", "At most 8 keys" },
                { "\xff\xfe", "not valid UTF-8" },
                { "ctrl+\n", "is not a key name" },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (GArray) combos = corral_computer_parse_keys (bad[i].text, &error);

                g_test_message ("%s: %s", bad[i].text, error ? error->message : "(accepted)");
                g_assert_null (combos);
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
                g_assert_nonnull (strstr (error->message, bad[i].said));
        }
        {
                g_autoptr (GError) error = NULL;

                g_assert_null (corral_computer_parse_keys (long_text, &error));
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
        }
        for (guint i = 0; i <= CORRAL_COMPUTER_COMBOS_MAX; i++)
                g_string_append (many, "a ");
        {
                g_autoptr (GError) error = NULL;

                g_assert_null (corral_computer_parse_keys (many->str, &error));
                g_assert_nonnull (strstr (error->message, "At most 16 key combinations"));
        }
        /* An escape sequence in a name is shown escaped, never sent to a terminal as it is. */
        {
                g_autoptr (GError) error = NULL;

                g_assert_null (corral_computer_parse_keys ("ctrl+x\x1b[31m", &error));
                g_assert_null (strchr (error->message, '\x1b'));
        }
}

static void
test_modifiers (void)
{
        CorralKeyCombo combo;
        g_autoptr (GError) error = NULL;

        g_assert_true (corral_computer_parse_modifiers (NULL, &combo, &error));
        g_assert_cmpuint (combo.n, ==, 0);
        g_assert_true (corral_computer_parse_modifiers ("ctrl+alt", &combo, &error));
        g_assert_no_error (error);
        g_assert_cmpuint (combo.n, ==, 2);
        g_assert_cmphex (combo.keysyms[1], ==, XKB_KEY_Alt_L);
        g_assert_false (corral_computer_parse_modifiers ("shift+a", &combo, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
        g_assert_cmpuint (combo.n, ==, 0);
        g_clear_error (&error);
        g_assert_false (corral_computer_parse_modifiers ("shift ctrl", &combo, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
}

static void
assert_typed (const char *text, const guint32 *want, guint n)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GArray) syms = corral_computer_text_keysyms (text, 1000, &error);

        g_assert_no_error (error);
        g_assert_cmpuint (syms->len, ==, n);
        for (guint i = 0; i < n; i++)
                g_assert_cmphex (g_array_index (syms, guint32, i), ==, want[i]);
}

static void
test_text (void)
{
        /* The symbols that come out wrong when keys are sent as a US layout's scancodes. */
        assert_typed ("@#{}|~<>",
                      (guint32[]){ XKB_KEY_at, XKB_KEY_numbersign, XKB_KEY_braceleft,
                                   XKB_KEY_braceright, XKB_KEY_bar, XKB_KEY_asciitilde,
                                   XKB_KEY_less, XKB_KEY_greater },
                      8);
        assert_typed ("é€ß", (guint32[]){ XKB_KEY_eacute, XKB_KEY_EuroSign, XKB_KEY_ssharp }, 3);
        /* Characters without a legacy keysym are Unicode keysyms. */
        assert_typed ("日", (guint32[]){ 0x1000000 + 0x65e5 }, 1);
        assert_typed ("a\nb\r\nc\td",
                      (guint32[]){ XKB_KEY_a, XKB_KEY_Return, XKB_KEY_b, XKB_KEY_Return, XKB_KEY_c,
                                   XKB_KEY_Tab, XKB_KEY_d },
                      7);
        assert_typed ("", NULL, 0);
}

static void
test_text_refused (void)
{
        static const char *const bad[] = { "a\x1b[2Jb", "x\x7fy", "right\u202eleft", "\xc3",
                                           "nul\x01" };

        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autoptr (GError) error = NULL;

                g_assert_null (corral_computer_text_keysyms (bad[i], 1000, &error));
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
        }
        {
                g_autoptr (GError) error = NULL;

                g_assert_null (corral_computer_text_keysyms ("abcdef", 5, &error));
                g_assert_nonnull (strstr (error->message, "longer than 5 characters"));
        }
}

static void
assert_scale (guint sw, guint sh, guint w, guint h)
{
        CorralScreenScale s;

        corral_computer_scale_init (&s, sw, sh);
        g_test_message ("%ux%u -> %ux%u", sw, sh, s.width, s.height);
        g_assert_cmpuint (s.width, ==, w);
        g_assert_cmpuint (s.height, ==, h);
        g_assert_cmpuint (MAX (s.width, s.height), <=, CORRAL_COMPUTER_MAX_LONG_EDGE);
        g_assert_cmpuint ((guint64) s.width * s.height, <=, CORRAL_COMPUTER_MAX_PIXELS);
}

static void
test_scale_sizes (void)
{
        /* Within both limits: as it is. */
        assert_scale (1280, 800, 1280, 800);
        assert_scale (1024, 768, 1024, 768);
        assert_scale (1, 1, 1, 1);
        /* Too many pixels: about 1.15 megapixels, the aspect kept. */
        assert_scale (1920, 1080, 1429, 804);
        assert_scale (3840, 2160, 1429, 804);
        assert_scale (1920, 1200, 1356, 847);
        /* Too long an edge. */
        assert_scale (4000, 100, 1568, 39);
        assert_scale (100, 4000, 39, 1568);
}

static void
test_scale_round_trip (void)
{
        static const guint sizes[][2] = { { 1280, 800 }, { 1920, 1080 }, { 3840, 2160 },
                                          { 1366, 768 }, { 4000, 100 },  { 641, 479 } };

        for (gsize i = 0; i < G_N_ELEMENTS (sizes); i++) {
                CorralScreenScale s;

                corral_computer_scale_init (&s, sizes[i][0], sizes[i][1]);
                /* Every point the model can name is a pixel of the screen that reads back as
                 * that point; the corners are the screen's corners (within one
                 * point's pixels). */
                for (guint x = 0; x < s.width; x++) {
                        guint sx, sy, mx, my;
                        guint y = (x * 7) % s.height;

                        g_assert_true (corral_computer_scale_to_screen (&s, x, y, &sx, &sy, NULL));
                        g_assert_cmpuint (sx, <, s.screen_width);
                        g_assert_cmpuint (sy, <, s.screen_height);
                        corral_computer_scale_to_model (&s, sx, sy, &mx, &my);
                        g_assert_cmpuint (mx, ==, x);
                        g_assert_cmpuint (my, ==, y);
                }
                {
                        guint sx, sy;

                        g_assert_true (corral_computer_scale_to_screen (&s, 0, 0, &sx, &sy, NULL));
                        g_assert_cmpuint (sx, <=, s.screen_width / s.width);
                        g_assert_cmpuint (sy, <=, s.screen_height / s.height);
                        g_assert_true (corral_computer_scale_to_screen (
                                &s, s.width - 1, s.height - 1, &sx, &sy, NULL));
                        g_assert_cmpuint (s.screen_width - 1 - sx, <=, s.screen_width / s.width);
                        g_assert_cmpuint (s.screen_height - 1 - sy, <=, s.screen_height / s.height);
                }
        }
}

static void
test_scale_off_screen (void)
{
        CorralScreenScale s;
        static const gint64 bad[][2] = {
                { -1, 0 },  { 0, -1 },         { 1429, 0 },
                { 0, 804 }, { G_MAXINT64, 5 }, { G_MININT64, G_MININT64 }
        };

        corral_computer_scale_init (&s, 1920, 1080);
        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autoptr (GError) error = NULL;
                guint sx = 7, sy = 7;

                g_assert_false (corral_computer_scale_to_screen (&s, bad[i][0], bad[i][1], &sx, &sy,
                                                                 &error));
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
                g_assert_nonnull (strstr (error->message, "1429 × 804"));
                g_assert_cmpuint (sx, ==, 7);
        }
}

/* The US keyboard table against xkeyboard-config's own "us" layout (as the images set): each
 * printable ASCII character's key is the one whose first or second (Shift) level gives it. */
static void
test_key_positions (void)
{
        struct xkb_context *ctx = xkb_context_new (XKB_CONTEXT_NO_ENVIRONMENT_NAMES);
        struct xkb_rule_names names = { .rules = "evdev", .model = "pc105", .layout = "us" };
        struct xkb_keymap *keymap = ctx ? xkb_keymap_new_from_names (ctx, &names, 0) : NULL;
        guint scancode;
        gboolean shift;

        if (!keymap) {
                g_test_skip ("no xkeyboard-config data here");
                g_clear_pointer (&ctx, xkb_context_unref);
                return;
        }
        for (guint32 c = 0x20; c < 0x7f; c++) {
                const xkb_keysym_t *syms;
                /* XT codes up to 83 are evdev codes; an X key code is evdev + 8 */
                xkb_keycode_t key;

                g_test_message ("%c", c);
                g_assert_true (corral_computer_key_position (c, &scancode, &shift));
                g_assert_cmpuint (scancode, <, 84);
                key = scancode + 8;
                g_assert_cmpint (
                        xkb_keymap_key_get_syms_by_level (keymap, key, 0, shift ? 1 : 0, &syms), ==,
                        1);
                g_assert_cmphex (syms[0], ==, c);
        }
        /* Keys that are not characters: E0-prefixed ones have bit 7 set. */
        g_assert_true (corral_computer_key_position (XKB_KEY_Return, &scancode, &shift));
        g_assert_cmphex (scancode, ==, 0x1c);
        g_assert_false (shift);
        g_assert_true (corral_computer_key_position (XKB_KEY_Up, &scancode, &shift));
        g_assert_cmphex (scancode, ==, 0xc8);
        g_assert_true (corral_computer_key_position (XKB_KEY_Control_R, &scancode, &shift));
        g_assert_cmphex (scancode, ==, 0x9d);
        /* No key for it on this keyboard: typed otherwise. */
        g_assert_false (corral_computer_key_position (XKB_KEY_eacute, &scancode, &shift));
        g_assert_false (corral_computer_key_position (XKB_KEY_EuroSign, &scancode, &shift));
        xkb_keymap_unref (keymap);
        xkb_context_unref (ctx);
}

/* X's Compose sequences, read from a Compose file: the shortest of US keys kept per character;
 * sequences with keys the US keyboard lacks, several characters, escapes, or garbage are not. */
static void
test_compose (void)
{
        static const char text[] = "# a comment\n"
                                   "<Multi_key> <acute> <e> : \"\xc3\xa9\" eacute\n"
                                   "<Multi_key> <apostrophe> <e> <e> : \"\xc3\xa9\" eacute\n"
                                   "<Multi_key> <apostrophe> <e> : \"\xc3\xa9\" eacute # short\n"
                                   "<Multi_key> <C> <equal> : \"\xe2\x82\xac\" EuroSign\n"
                                   "<dead_acute> <a> : \"\xc3\xa1\" aacute\n"
                                   "<Multi_key> <x> <y> : \"xy\"\n"
                                   "<Multi_key> <q> <q> : \"\\\"\"\n"
                                   "<Multi_key> <nosuchkey> <o> : \"\xc3\xb8\"\n"
                                   "<Multi_key> <o> <o> \"\xc2\xb0\"\n"
                                   "<Multi_key> <s> <s> : \"\xc3\x9f\" ssharp\n";
        guint32 keys[CORRAL_COMPUTER_COMPOSE_MAX];
        guint n = 0;

        g_assert_true (corral_computer_compose_sequence_in (text, 0xe9, keys, &n));
        g_assert_cmpuint (n, ==, 2);
        g_assert_cmphex (keys[0], ==, XKB_KEY_apostrophe);
        g_assert_cmphex (keys[1], ==, XKB_KEY_e);
        g_assert_true (corral_computer_compose_sequence_in (text, 0x20ac, keys, &n));
        g_assert_cmphex (keys[0], ==, XKB_KEY_C);
        g_assert_true (corral_computer_compose_sequence_in (text, 0xdf, keys, &n));
        /* not a Multi_key sequence; not one character; an escape; an unknown key; no ':' */
        g_assert_false (corral_computer_compose_sequence_in (text, 0xe1, keys, &n));
        g_assert_false (corral_computer_compose_sequence_in (text, 'x', keys, &n));
        g_assert_false (corral_computer_compose_sequence_in (text, '"', keys, &n));
        g_assert_false (corral_computer_compose_sequence_in (text, 0xf8, keys, &n));
        g_assert_false (corral_computer_compose_sequence_in (text, 0xb0, keys, &n));
        g_assert_false (corral_computer_compose_sequence_in ("<Multi_key> <a", 'a', keys, &n));
        g_assert_false (corral_computer_compose_sequence_in ("", 'a', keys, &n));

        /* This computer's own table, as the image has it (libx11's). */
        if (!g_file_test ("/usr/share/X11/locale/en_US.UTF-8/Compose", G_FILE_TEST_EXISTS)) {
                g_test_skip ("no X Compose table here (libx11-data)");
                return;
        }
        g_assert_true (corral_computer_compose_sequence (0x20ac, keys, &n));
        g_assert_true (corral_computer_compose_sequence (0xfc, keys, &n)); /* ü */
        g_assert_false (corral_computer_compose_sequence (0x4e2d, keys, &n)); /* 中 */
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/computer/keys/names", test_keys_names);
        g_test_add_func ("/computer/keys/sequence", test_keys_sequence);
        g_test_add_func ("/computer/keys/refused", test_keys_refused);
        g_test_add_func ("/computer/keys/modifiers", test_modifiers);
        g_test_add_func ("/computer/keys/positions", test_key_positions);
        g_test_add_func ("/computer/text", test_text);
        g_test_add_func ("/computer/compose", test_compose);
        g_test_add_func ("/computer/text/refused", test_text_refused);
        g_test_add_func ("/computer/scale/sizes", test_scale_sizes);
        g_test_add_func ("/computer/scale/round-trip", test_scale_round_trip);
        g_test_add_func ("/computer/scale/off-screen", test_scale_off_screen);
        return g_test_run ();
}
