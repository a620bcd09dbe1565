// A minimal APK built at test time: a binary AndroidManifest.xml (Android's compiled XML, "AXML":
// ResourceTypes.h ResXMLTree chunks) naming a package, versionCode and versionName, zipped with
// fflate. It installs nothing real; it is enough for `aapt dump badging` to report its identity.
import { zipSync } from 'fflate';

// ResourceTypes.h chunk types and value types.
const RES_STRING_POOL_TYPE = 0x0001;
const RES_XML_TYPE = 0x0003;
const RES_XML_START_NAMESPACE_TYPE = 0x0100;
const RES_XML_END_NAMESPACE_TYPE = 0x0101;
const RES_XML_START_ELEMENT_TYPE = 0x0102;
const RES_XML_END_ELEMENT_TYPE = 0x0103;
const RES_XML_RESOURCE_MAP_TYPE = 0x0180;
const TYPE_STRING = 0x03;
const TYPE_INT_DEC = 0x10;
const NO_INDEX = 0xffffffff;

const ANDROID_NS = 'http://schemas.android.com/apk/res/android';
// android.R.attr ids: aapt finds namespaced attributes by these, not by their names.
const ATTR_VERSION_CODE = 0x0101021b;
const ATTR_VERSION_NAME = 0x0101021c;
const ATTR_MIN_SDK_VERSION = 0x0101020c;

export interface TestApkOptions {
  package: string;
  versionCode: number;
  versionName: string;
}

function chunk(type: number, headerSize: number, body: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt16LE(type, 0);
  header.writeUInt16LE(headerSize, 2);
  header.writeUInt32LE(8 + body.length, 4);
  return Buffer.concat([header, body]);
}

/** A UTF-16 string pool (ResStringPool_header, then offsets, then length-prefixed strings). */
function encodeStringPool(strings: string[]): Buffer {
  const encoded = strings.map((value) => {
    const text = Buffer.from(value, 'utf16le');
    const entry = Buffer.alloc(2 + text.length + 2);
    entry.writeUInt16LE(value.length, 0);
    text.copy(entry, 2);
    return entry;
  });
  const offsets = Buffer.alloc(4 * strings.length);
  let offset = 0;
  encoded.forEach((entry, index) => {
    offsets.writeUInt32LE(offset, 4 * index);
    offset += entry.length;
  });
  let data = Buffer.concat(encoded);
  if (data.length % 4 !== 0) data = Buffer.concat([data, Buffer.alloc(4 - (data.length % 4))]);
  const header = Buffer.alloc(20);
  header.writeUInt32LE(strings.length, 0);
  header.writeUInt32LE(0, 4); // styleCount
  header.writeUInt32LE(0, 8); // flags: UTF-16, unsorted
  header.writeUInt32LE(28 + offsets.length, 12); // stringsStart, from the chunk's start
  header.writeUInt32LE(0, 16); // stylesStart
  return chunk(RES_STRING_POOL_TYPE, 28, Buffer.concat([header, offsets, data]));
}

function node(type: number, extension: Buffer): Buffer {
  const lineAndComment = Buffer.alloc(8);
  lineAndComment.writeUInt32LE(1, 0);
  lineAndComment.writeUInt32LE(NO_INDEX, 4);
  return chunk(type, 16, Buffer.concat([lineAndComment, extension]));
}

function uint32s(...values: number[]): Buffer {
  const buffer = Buffer.alloc(4 * values.length);
  values.forEach((value, index) => {
    buffer.writeUInt32LE(value >>> 0, 4 * index);
  });
  return buffer;
}

interface Attribute {
  ns: number;
  name: number;
  raw: number;
  type: number;
  data: number;
}

function startElement(name: number, attributes: Attribute[]): Buffer {
  const extension = Buffer.alloc(20);
  extension.writeUInt32LE(NO_INDEX, 0); // ns
  extension.writeUInt32LE(name, 4);
  extension.writeUInt16LE(20, 8); // attributeStart
  extension.writeUInt16LE(20, 10); // attributeSize
  extension.writeUInt16LE(attributes.length, 12);
  const encoded = attributes.map((attribute) => {
    const buffer = Buffer.alloc(20);
    buffer.writeUInt32LE(attribute.ns >>> 0, 0);
    buffer.writeUInt32LE(attribute.name, 4);
    buffer.writeUInt32LE(attribute.raw >>> 0, 8);
    buffer.writeUInt16LE(8, 12); // Res_value.size
    buffer.writeUInt8(attribute.type, 15);
    buffer.writeUInt32LE(attribute.data >>> 0, 16);
    return buffer;
  });
  return node(RES_XML_START_ELEMENT_TYPE, Buffer.concat([extension, ...encoded]));
}

/** The compiled manifest: <manifest package versionCode versionName><uses-sdk/></manifest>. */
export function encodeManifest(options: TestApkOptions): Buffer {
  // Attribute names with a resource id come first, in the order of the resource map.
  const strings = [
    'versionCode',
    'versionName',
    'minSdkVersion',
    'android',
    ANDROID_NS,
    'manifest',
    'package',
    options.package,
    options.versionName,
    'uses-sdk',
  ];
  const index = (value: string) => strings.indexOf(value);
  const ns = index(ANDROID_NS);
  const manifest = startElement(index('manifest'), [
    {
      ns: NO_INDEX,
      name: index('package'),
      raw: index(options.package),
      type: TYPE_STRING,
      data: index(options.package),
    },
    {
      ns,
      name: index('versionCode'),
      raw: NO_INDEX,
      type: TYPE_INT_DEC,
      data: options.versionCode,
    },
    {
      ns,
      name: index('versionName'),
      raw: index(options.versionName),
      type: TYPE_STRING,
      data: index(options.versionName),
    },
  ]);
  const usesSdk = startElement(index('uses-sdk'), [
    { ns, name: index('minSdkVersion'), raw: NO_INDEX, type: TYPE_INT_DEC, data: 21 },
  ]);
  const end = (name: number) => node(RES_XML_END_ELEMENT_TYPE, uint32s(NO_INDEX, name));
  const namespace = uint32s(index('android'), ns);
  const body = Buffer.concat([
    encodeStringPool(strings),
    chunk(
      RES_XML_RESOURCE_MAP_TYPE,
      8,
      uint32s(ATTR_VERSION_CODE, ATTR_VERSION_NAME, ATTR_MIN_SDK_VERSION),
    ),
    node(RES_XML_START_NAMESPACE_TYPE, namespace),
    manifest,
    usesSdk,
    end(index('uses-sdk')),
    end(index('manifest')),
    node(RES_XML_END_NAMESPACE_TYPE, namespace),
  ]);
  return chunk(RES_XML_TYPE, 8, body);
}

/** The APK's bytes: a zip holding the manifest and a classes.dex placeholder. */
export function buildTestApk(options: TestApkOptions): Buffer {
  return Buffer.from(
    zipSync({
      'AndroidManifest.xml': new Uint8Array(encodeManifest(options)),
      'classes.dex': new Uint8Array(Buffer.from('dex\n035\0')),
    }),
  );
}
