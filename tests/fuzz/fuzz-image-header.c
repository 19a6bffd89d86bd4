/* fuzz-image-header.c — libFuzzer target for the image header reader the Changes panel uses
 * before it lets GTK decode an image the guest wrote (corral_task_image_size()): any bytes, no
 * crash, no read past the end; dimensions it reports are non-zero and, for PNG, those of IHDR.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-task-changes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        /* A copy of exactly size bytes, so that a read past the end is caught under ASan. */
        uint8_t *copy = malloc (size ? size : 1);
        guint w = 0, h = 0;

        memcpy (copy, data, size);
        if (corral_task_image_size (copy, size, &w, &h)) {
                if (w == 0 || h == 0)
                        abort ();
                if (size >= 8 && copy[0] == 0x89 &&
                    (w != ((guint) copy[16] << 24 | (guint) copy[17] << 16 | (guint) copy[18] << 8 |
                           copy[19])))
                        abort ();
        }
        free (copy);
        return 0;
}
