"""Our own mesh shaders, used in place of pyrender's physically based ones.

pyrender's PBR fragment shader costs ~200 ns per pixel in software GL (llvmpipe); a ground plane
alone took ~100 ms at 720p. These light per vertex (Gouraud: Lambert, a small specular term,
ambient and emissive light, two-sided), in display colour space (a colour lit head-on at full
intensity shows as given), so a pixel costs one interpolation. They read
the same uniforms pyrender sets (``material.*``, ``directional_lights[i].*``, ``ambient_light``,
``cam_pos``, ``M``/``V``/``P``) and the per-instance matrix ``inst_m``; pyrender's loader turns the
``#ifdef NAME`` lines and define names into values. The normal matrix is the cofactor of the
model matrix (the inverse-transpose up to scale), not a per-vertex ``inverse()``.

pyrender loads shaders from files, so :func:`shader_paths` writes these to the engine's cache
folder once per machine (a temp folder per process, removed at its exit, left 21 folders behind
in one test run: the processes killed never ran their exit).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path

from ..cache_root import cache_root

MESH_VERT = """#version 330 core
struct DirLight {
    vec3 color;
    float intensity;
    vec3 direction;
};
struct Mat {
    vec3 emissive_factor;
    vec4 base_color_factor;
    float metallic_factor;
    float roughness_factor;
};

layout(location = 0) in vec3 position;
#ifdef NORMAL_LOC
layout(location = NORMAL_LOC) in vec3 normal;
#endif
#ifdef COLOR_0_LOC
layout(location = COLOR_0_LOC) in vec4 color_0;
#endif
layout(location = INST_M_LOC) in mat4 inst_m;

uniform mat4 M;
uniform mat4 V;
uniform mat4 P;
uniform Mat material;
uniform DirLight directional_lights[MAX_DIRECTIONAL_LIGHTS];
uniform int n_directional_lights;
uniform vec3 ambient_light;
uniform vec3 cam_pos;

out vec4 shade;

void main()
{
    mat4 W = M * inst_m;
    vec4 world = W * vec4(position, 1.0);
    gl_Position = P * (V * world);
#ifdef NORMAL_LOC
    mat3 A = mat3(W);
    vec3 n = normalize(mat3(cross(A[1], A[2]), cross(A[2], A[0]), cross(A[0], A[1])) * normal);
#else
    vec3 n = vec3(0.0, 0.0, 1.0);
#endif
    vec3 v = normalize(cam_pos - world.xyz);
    if (dot(n, v) < 0.0) {
        n = -n;
    }
#ifdef COLOR_0_LOC
    vec4 albedo = material.base_color_factor * color_0;
#else
    vec4 albedo = material.base_color_factor;
#endif
    vec3 base = albedo.rgb;
    float gloss = 0.3 * (1.0 - material.roughness_factor);
    vec3 color = (ambient_light + material.emissive_factor) * base;
    for (int i = 0; i < n_directional_lights; i++) {
        vec3 l = -directional_lights[i].direction;
        float nl = max(dot(n, l), 0.0);
        float s = max(dot(n, normalize(l + v)), 0.0);
        s *= s;
        s *= s;
        s *= s;
        s *= s;
        color += directional_lights[i].color * directional_lights[i].intensity * (base * nl + gloss * s * nl);
    }
    shade = vec4(clamp(color, 0.0, 1.0), albedo.a);
}
"""

MESH_FRAG = """#version 330 core
in vec4 shade;
out vec4 frag_color;

void main()
{
    frag_color = shade;
}
"""

_DIR: Path | None = None


def shader_paths() -> dict[str, str]:
    """``{"mesh.vert": path, "mesh.frag": path}`` of our shaders on disk: in the engine's cache
    folder, under a digest of their text (written once per machine and version, by whichever
    process comes first, each file whole: written aside, then renamed), or, where that folder
    cannot be written, in a temp folder of this process's (removed at its exit)."""
    global _DIR
    if _DIR is None or not all((_DIR / name).is_file() for name in _SOURCES):
        _DIR = _written(_shared_folder()) or _written(None)
        if _DIR is None:
            raise OSError(f"the renderer's shaders could not be written to {_shared_folder()} nor to a temp folder")
    return {name: str(_DIR / name) for name in _SOURCES}


_SOURCES = {"mesh.vert": MESH_VERT, "mesh.frag": MESH_FRAG}


def _shared_folder() -> Path:
    digest = hashlib.sha256("\0".join(_SOURCES.values()).encode()).hexdigest()[:16]
    return cache_root() / "shaders" / digest


def _written(folder: Path | None) -> Path | None:
    """``folder`` holding the shaders (made if need be; None: a new temp folder), or None when it
    cannot be written."""
    try:
        if folder is None:
            folder = Path(tempfile.mkdtemp(prefix="ikstudio-shaders-"))
            atexit.register(shutil.rmtree, folder, True)
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in _SOURCES.items():
            path = folder / name
            if path.is_file() and path.read_text() == text:
                continue
            aside = folder / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"  # (render threads may race)
            aside.write_text(text)
            os.replace(aside, path)  # whole or not at all, for a process reading it meanwhile
    except OSError:
        return None
    return folder
