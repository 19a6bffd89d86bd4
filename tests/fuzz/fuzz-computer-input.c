/* fuzz-computer-input.c — libFuzzer target for what a model's computer action names (app/
 * computer): any bytes as key names, as the modifiers of a click and as text to type, and the
 * first eight as a screen size and a point on it. No crash, no read past the end; whatever is
 * accepted stays within its limits, and every point the model can name maps onto the screen.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-computer-keys.h"
#include "corral-computer-screen.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
screen (const uint8_t *data, size_t size)
{
        CorralScreenScale s;
        guint sw, sh, x, y, mx, my;
        gint64 px, py;

        if (size < 8)
                return;
        sw = 1 + ((guint) data[0] << 8 | data[1]) % 8192;
        sh = 1 + ((guint) data[2] << 8 | data[3]) % 8192;
        corral_computer_scale_init (&s, sw, sh);
        if (s.width == 0 || s.height == 0 || s.width > sw || s.height > sh ||
            MAX (s.width, s.height) > CORRAL_COMPUTER_MAX_LONG_EDGE ||
            (guint64) s.width * s.height > CORRAL_COMPUTER_MAX_PIXELS)
                abort ();
        px = (gint16) ((guint) data[4] << 8 | data[5]);
        py = (gint16) ((guint) data[6] << 8 | data[7]);
        if (corral_computer_scale_to_screen (&s, px, py, &x, &y, NULL)) {
                if (x >= sw || y >= sh)
                        abort ();
                corral_computer_scale_to_model (&s, x, y, &mx, &my);
                if (mx != px || my != py)
                        abort ();
        } else if (px >= 0 && py >= 0 && px < s.width && py < s.height) {
                abort ();
        }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        char *text = g_strndup ((const char *) data, size);
        GArray *combos, *syms;
        CorralKeyCombo combo;

        combos = corral_computer_parse_keys (text, NULL);
        if (combos) {
                if (combos->len == 0 || combos->len > CORRAL_COMPUTER_COMBOS_MAX)
                        abort ();
                for (guint i = 0; i < combos->len; i++) {
                        const CorralKeyCombo *c = &g_array_index (combos, CorralKeyCombo, i);

                        if (c->n == 0 || c->n > CORRAL_COMPUTER_COMBO_MAX)
                                abort ();
                        for (guint k = 0; k < c->n; k++)
                                if (c->keysyms[k] == 0)
                                        abort ();
                }
                g_array_unref (combos);
        }
        if (corral_computer_parse_modifiers (text, &combo, NULL)) {
                for (guint k = 0; k < combo.n; k++)
                        if (!corral_computer_keysym_is_modifier (combo.keysyms[k]))
                                abort ();
        }
        syms = corral_computer_text_keysyms (text, 64, NULL);
        if (syms) {
                if (syms->len > 64)
                        abort ();
                for (guint i = 0; i < syms->len; i++)
                        if (g_array_index (syms, guint32, i) == 0)
                                abort ();
                g_array_unref (syms);
        }
        screen (data, size);
        g_free (text);
        return 0;
}
