/* corral-computer-screen.h — the VM's screen as the model sees it: the size a screenshot is
 * scaled to, and the model's coordinates mapped back to the screen's pixels.
 *
 * A model resizes an image larger than it takes (Anthropic's: a long edge over 1568 pixels or
 * more than about 1.15 megapixels), and then its clicks drift from what it saw. Corral scales
 * each screenshot itself to fit both limits, keeps the aspect ratio, tells the model that size
 * as the screen's, and maps every coordinate it sends back through the same ratio: pixel
 * centres map to pixel centres, so a point read off a screenshot lands on that pixel, and a
 * screen position shown back (a click marked on a screenshot) reads as the same point.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define CORRAL_COMPUTER_MAX_LONG_EDGE 1568
#define CORRAL_COMPUTER_MAX_PIXELS 1150000

typedef struct {
        guint screen_width; /* the VM's framebuffer */
        guint screen_height;
        guint width; /* what the model sees, and the coordinates it uses */
        guint height;
} CorralScreenScale;

/* The scale for a screen of screen_width x screen_height (each at least 1). */
void corral_computer_scale_init (CorralScreenScale *scale, guint screen_width, guint screen_height);

/* The model's point (x, y) as a pixel of the screen: FALSE with G_IO_ERROR_INVALID_ARGUMENT,
 * naming the screen's size as the model knows it, when the point is off it. */
gboolean corral_computer_scale_to_screen (const CorralScreenScale *scale,
                                          gint64 x,
                                          gint64 y,
                                          guint *screen_x,
                                          guint *screen_y,
                                          GError **error);

/* A screen pixel as the model's point (the pointer's position, a click to mark). */
void corral_computer_scale_to_model (
        const CorralScreenScale *scale, guint screen_x, guint screen_y, guint *x, guint *y);

G_END_DECLS
