/* corral-computer-screen.c — screenshot size and coordinates (see corral-computer-screen.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-computer-screen.h"

#include <gio/gio.h>
#include <glib/gi18n.h>
#include <math.h>

void
corral_computer_scale_init (CorralScreenScale *scale, guint screen_width, guint screen_height)
{
        double w = MAX (screen_width, 1), h = MAX (screen_height, 1);
        double factor = 1.0;

        factor = MIN (factor, CORRAL_COMPUTER_MAX_LONG_EDGE / MAX (w, h));
        factor = MIN (factor, sqrt (CORRAL_COMPUTER_MAX_PIXELS / (w * h)));
        scale->screen_width = (guint) w;
        scale->screen_height = (guint) h;
        scale->width = MAX (1, (guint) floor (w * factor));
        scale->height = MAX (1, (guint) floor (h * factor));
        /* floor() keeps both limits; a rounding error above them is taken back a pixel. */
        while ((guint64) scale->width * scale->height > CORRAL_COMPUTER_MAX_PIXELS) {
                if (scale->width >= scale->height && scale->width > 1)
                        scale->width--;
                else if (scale->height > 1)
                        scale->height--;
                else
                        break;
        }
}

/* The pixel of n (0 … to - 1) whose centre is nearest the centre of pixel i of from. */
static guint
map (guint64 i, guint from, guint to)
{
        guint64 v = ((2 * i + 1) * (guint64) to) / (2 * (guint64) from);

        return (guint) MIN (v, (guint64) to - 1);
}

gboolean
corral_computer_scale_to_screen (const CorralScreenScale *scale,
                                 gint64 x,
                                 gint64 y,
                                 guint *screen_x,
                                 guint *screen_y,
                                 GError **error)
{
        if (x < 0 || y < 0 || x >= scale->width || y >= scale->height) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("(%lld, %lld) is off the screen, which is %u × %u: x from 0 to "
                                "%u, y from 0 to %u"),
                             (long long) x, (long long) y, scale->width, scale->height,
                             scale->width - 1, scale->height - 1);
                return FALSE;
        }
        *screen_x = map ((guint64) x, scale->width, scale->screen_width);
        *screen_y = map ((guint64) y, scale->height, scale->screen_height);
        return TRUE;
}

void
corral_computer_scale_to_model (
        const CorralScreenScale *scale, guint screen_x, guint screen_y, guint *x, guint *y)
{
        *x = map (MIN (screen_x, scale->screen_width - 1), scale->screen_width, scale->width);
        *y = map (MIN (screen_y, scale->screen_height - 1), scale->screen_height, scale->height);
}
