import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'elastic-lite-jupyterlite:plugin',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    console.log('elastic-lite loaded', app.name);
  }
};
export default plugin;
