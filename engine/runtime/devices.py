"""Which compute devices this machine has, asked of the drivers themselves (no taichi involved).

Taichi picks a Vulkan device by its own score and never says which, and a software Vulkan
device (Mesa's lavapipe/llvmpipe, SwiftShader) is on most Linux desktops and servers: with no GPU
it is all the Vulkan loader offers. :func:`engine.runtime.backend.init` uses this module to skip such a
device for ``backend="gpu"``, to refuse ``precision="64"`` on a device without float64 before it
resets anything, and to name the device it runs on.

* :func:`vulkan_devices` calls the Vulkan loader (``libvulkan.so.1``) through ctypes: one
  instance, ``vkEnumeratePhysicalDevices``, ``vkGetPhysicalDeviceProperties`` and
  ``...Features`` of each device, then ``vkDestroyInstance``. Only the leading fields of those
  structs are read; they have been fixed since Vulkan 1.0.
* :func:`cuda_device_name` asks the CUDA driver (``libcuda.so.1``) for device 0's name, which is
  the device taichi's CUDA backend uses (after ``CUDA_VISIBLE_DEVICES``).
* :func:`cpu_name` reads ``/proc/cpuinfo``.

Every function returns an empty answer rather than raising when a driver is missing or fails.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
from dataclasses import dataclass

# VkPhysicalDeviceType
DEVICE_TYPES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}
SOFTWARE_NAMES = ("llvmpipe", "lavapipe", "swiftshader", "softpipe")
_TYPE_RANK = {2: 3, 1: 2, 3: 1}  # taichi's order of preference (see best_vulkan_device)
_SHADER_FLOAT64 = 39  # index of shaderFloat64 among VkPhysicalDeviceFeatures' VkBool32 fields
_N_FEATURES = 55
_PROPERTIES_BYTES = 4096  # VkPhysicalDeviceProperties is ~824 bytes; room to spare


@dataclass(frozen=True)
class VulkanDevice:
    """One Vulkan physical device: its index in the loader's order (what ``TI_VISIBLE_DEVICE``
    takes), name, ``VkPhysicalDeviceType`` code and whether shaders can use float64."""

    index: int
    name: str
    device_type: int
    float64: bool

    @property
    def software(self) -> bool:
        """True for a device that runs on the CPU (lavapipe, llvmpipe, SwiftShader)."""
        return self.device_type == 4 or any(s in self.name.lower() for s in SOFTWARE_NAMES)

    @property
    def kind(self) -> str:
        return DEVICE_TYPES.get(self.device_type, "other")


class _AppInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ctypes.c_void_p), ("pApplicationName", ctypes.c_char_p),
                ("applicationVersion", ctypes.c_uint32), ("pEngineName", ctypes.c_char_p),
                ("engineVersion", ctypes.c_uint32), ("apiVersion", ctypes.c_uint32)]


class _InstanceInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32),
                ("pApplicationInfo", ctypes.POINTER(_AppInfo)), ("enabledLayerCount", ctypes.c_uint32),
                ("ppEnabledLayerNames", ctypes.c_void_p), ("enabledExtensionCount", ctypes.c_uint32),
                ("ppEnabledExtensionNames", ctypes.c_void_p)]


class _PropertiesHead(ctypes.Structure):
    """The leading fields of VkPhysicalDeviceProperties."""

    _fields_ = [("apiVersion", ctypes.c_uint32), ("driverVersion", ctypes.c_uint32), ("vendorID", ctypes.c_uint32),
                ("deviceID", ctypes.c_uint32), ("deviceType", ctypes.c_int), ("deviceName", ctypes.c_char * 256)]


@functools.cache
def vulkan_devices() -> tuple[VulkanDevice, ...] | None:
    """Every Vulkan physical device the loader reports, in its order: () when there is none, None
    when the loader could not be asked (no ``libvulkan.so.1``, or it failed). Cached: the answer
    does not change while the process runs."""
    try:
        vk = ctypes.CDLL("libvulkan.so.1")
    except OSError:
        return None
    try:
        return _enumerate(vk)
    except Exception:  # a broken driver must not break engine.init
        return None


def _enumerate(vk) -> tuple[VulkanDevice, ...]:
    app = _AppInfo(sType=0, pApplicationName=b"ikstudio", apiVersion=(1 << 22))  # VK_API_VERSION_1_0
    info = _InstanceInfo(sType=1, pApplicationInfo=ctypes.pointer(app))  # VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO
    instance = ctypes.c_void_p()
    if vk.vkCreateInstance(ctypes.byref(info), None, ctypes.byref(instance)) != 0:
        return ()
    try:
        count = ctypes.c_uint32(0)
        vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), None)
        handles = (ctypes.c_void_p * count.value)()
        if count.value == 0 or vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), handles) not in (0, 5):
            return ()  # VK_SUCCESS or VK_INCOMPLETE
        devices = []
        for i in range(count.value):
            props = ctypes.create_string_buffer(_PROPERTIES_BYTES)
            vk.vkGetPhysicalDeviceProperties(ctypes.c_void_p(handles[i]), props)
            head = _PropertiesHead.from_buffer(props)
            features = (ctypes.c_uint32 * _N_FEATURES)()
            vk.vkGetPhysicalDeviceFeatures(ctypes.c_void_p(handles[i]), features)
            devices.append(VulkanDevice(i, head.deviceName.decode(errors="replace"), int(head.deviceType),
                                        bool(features[_SHADER_FLOAT64])))
        return tuple(devices)
    finally:
        vk.vkDestroyInstance(instance, None)


def best_vulkan_device(devices=None) -> VulkanDevice | None:
    """Of ``devices`` (default: all of them), the one taichi's Vulkan backend runs on: the one
    ``TI_VISIBLE_DEVICE`` names (by its loader index; None if it is not among them), else the
    best kind (discrete, then integrated, then virtual GPUs, then the rest; the first of a kind),
    which is taichi's own order. :func:`engine.runtime.backend.init` sets ``TI_VISIBLE_DEVICE`` to the
    device it chose, so that taichi runs on exactly that one."""
    devices = (vulkan_devices() if devices is None else devices) or ()
    if not devices:
        return None
    visible = os.environ.get("TI_VISIBLE_DEVICE", "").strip()
    if visible.isdigit():
        return next((d for d in devices if d.index == int(visible)), None)
    return max(devices, key=lambda d: (_TYPE_RANK.get(d.device_type, 0), -d.index))


def hardware_vulkan_devices(devices=None) -> tuple[VulkanDevice, ...]:
    """The Vulkan devices that are real GPUs."""
    devices = (vulkan_devices() if devices is None else devices) or ()
    return tuple(d for d in devices if not d.software)


@functools.cache
def cuda_device_name() -> str:
    """Name of CUDA device 0 (as ``CUDA_VISIBLE_DEVICES`` orders them), or "" when there is none."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        if cuda.cuInit(0) != 0:
            return ""
        device = ctypes.c_int()
        if cuda.cuDeviceGet(ctypes.byref(device), 0) != 0:
            return ""
        name = ctypes.create_string_buffer(256)
        if cuda.cuDeviceGetName(name, 256, device) != 0:
            return ""
        return name.value.decode(errors="replace")
    except (OSError, AttributeError):
        return ""


@functools.cache
def cpu_name() -> str:
    """The processor's model name ("x86_64" or the like when the system does not say)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"
